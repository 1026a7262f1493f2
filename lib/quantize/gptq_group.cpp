#include "quantize/gptq_group.h"

#include <ATen/ATen.h>

#include <map>
#include <string>
#include <vector>

#include "formats/architectures.h"
#include "quantize/gptq.h"
#include "quantize/layer_values.h"
#include "runtime/model.h"

namespace fsq {

void quantize_group_gptq(const DecoderLayer& layer, const PassContext& ctx, const LinearGroup& group,
                         const at::Tensor& hessian, PassResult& result) {
  // The group's rounded linears by width (one width unless a plan gives them several): one
  // GPTQ run per width on their stacked rows. Rows are independent given the Hessian;
  // stacking only shares the work.
  std::map<int, std::vector<std::string>> by_width;
  for (const auto& role : group.roles)
    if (ctx.rounds(role)) by_width[ctx.bits_for(role)].push_back(role);
  double nearest = 0, gptq = 0;
  for (const auto& [bits, roles] : by_width) {
    std::vector<at::Tensor> weights;
    for (const auto& role : roles) weights.push_back(dense_linear(layer, role, "gptq").weight().to(at::kFloat));
    const at::Tensor stacked = at::cat(weights, 0);
    const UniformQuant q = ctx.quant_for(roles.front(), stacked.size(1));
    const GroupQuantized g = gptq_quantize(stacked, hessian, q);
    nearest += gptq_loss(stacked, fake_quantize(stacked, q), hessian);
    gptq += gptq_loss(stacked, dequantize_groups(g, q), hessian);
    int64_t row = 0;
    for (size_t r = 0; r < roles.size(); ++r) {
      const int64_t rows = weights[r].size(0);
      result.quantized[roles[r]] = {g.codes.slice(0, row, row + rows), g.scales.slice(0, row, row + rows),
                                    g.zeros.slice(0, row, row + rows)};
      row += rows;
    }
  }
  if (!by_width.empty()) result.report[group.name]["gptq_loss_vs_nearest"] = nearest > 0 ? gptq / nearest : 1.0;
}

}  // namespace fsq
