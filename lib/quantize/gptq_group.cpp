#include "quantize/gptq_group.h"

#include <ATen/ATen.h>

#include <vector>

#include "formats/architectures.h"
#include "quantize/gptq.h"
#include "quantize/layer_values.h"
#include "runtime/model.h"

namespace fsq {

void quantize_group_gptq(const DecoderLayer& layer, const PassContext& ctx, const LinearGroup& group,
                         const at::Tensor& hessian, PassResult& result) {
  std::vector<at::Tensor> weights;
  for (const auto& role : group.roles) weights.push_back(dense_linear(layer, role, "gptq").weight().to(at::kFloat));
  const at::Tensor stacked = at::cat(weights, 0);
  const UniformQuant q = ctx.quant_for(stacked.size(1));
  const GroupQuantized g = gptq_quantize(stacked, hessian, q);
  const double nearest = gptq_loss(stacked, fake_quantize(stacked, q), hessian);
  const double gptq = gptq_loss(stacked, dequantize_groups(g, q), hessian);
  result.report[group.name]["gptq_loss_vs_nearest"] = nearest > 0 ? gptq / nearest : 1.0;
  int64_t row = 0;
  for (size_t r = 0; r < group.roles.size(); ++r) {
    const int64_t rows = weights[r].size(0);
    result.quantized[group.roles[r]] = {g.codes.slice(0, row, row + rows), g.scales.slice(0, row, row + rows),
                                        g.zeros.slice(0, row, row + rows)};
    row += rows;
  }
}

}  // namespace fsq
