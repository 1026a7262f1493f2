#include "quantize/rounding.h"

#include <ATen/ATen.h>

#include "formats/architectures.h"
#include "quantize/fake_quant.h"
#include "quantize/gptq.h"
#include "quantize/gptq_group.h"
#include "quantize/layer_values.h"
#include "runtime/model.h"

namespace fsq {

GroupHessians group_hessians(const LayerActivations& inputs, const PassContext& ctx) {
  GroupHessians out;
  for (const LinearGroup& group : ctx.arch.groups) out[group.name] = gptq_hessian(inputs.groups.at(group.name));
  return out;
}

void round_layer(const DecoderLayer& layer, const PassContext& ctx, const GroupHessians* gptq, PassResult result,
                 StoredLayer& stored) {
  if (gptq)
    for (const LinearGroup& group : ctx.arch.groups) quantize_group_gptq(layer, ctx, group, gptq->at(group.name), result);
  if (stored.report.is_null())
    stored.report = result.report;
  else
    stored.report.update(result.report);
  for (const auto& spec : ctx.arch.linears) {
    if (!ctx.rounds(spec.role)) continue;
    const DenseLinear& d = dense_linear(layer, spec.role, "quantize");
    const UniformQuant used = ctx.quant_for(spec.role, d.in_features());
    const auto it = result.quantized.find(spec.role);
    stored.linears.emplace(spec.role,
                           to_quantized_matrix(it != result.quantized.end() ? it->second
                                                                            : quantize_groups(d.weight().to(at::kFloat), used),
                                               used));
    if (d.bias()) stored.vectors[spec.role + ".bias"] = to_floats(*d.bias());
  }
  stored.vectors["input_norm"] = to_floats(layer.input_norm);
  stored.vectors["post_attn_norm"] = to_floats(layer.post_attn_norm);
  for (const auto& [role, absmax] : result.input_absmax) stored.vectors[role + kInputAbsmaxKey] = {absmax};
}

}  // namespace fsq
