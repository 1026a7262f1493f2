#include "quantize/layer_inputs.h"

#include <ATen/ATen.h>

#include <map>
#include <vector>

#include "runtime/model.h"

namespace fsq {
namespace {

class CollectTap final : public LayerTap {
 public:
  void group_input(const std::string& group, const at::Tensor& x) override { parts[group].push_back(x.detach()); }
  std::map<std::string, std::vector<at::Tensor>> parts;
};

}  // namespace

LayerRun run_fp_layer(const DecoderLayer& layer, const at::Tensor& hidden, const RopeTables& rope,
                      const ModelConfig& cfg, int64_t index, int64_t batch, bool collect_group_inputs) {
  at::NoGradGuard no_grad;
  CollectTap tap;
  std::vector<at::Tensor> outputs;
  for (int64_t b = 0; b < hidden.size(0); b += batch) {
    at::Tensor hb = hidden.narrow(0, b, std::min(batch, hidden.size(0) - b));
    outputs.push_back(layer.forward(hb, rope, cfg, 0, nullptr, index, collect_group_inputs ? &tap : nullptr));
  }
  LayerRun run;
  run.output = at::cat(outputs, 0);
  for (auto& [group, parts] : tap.parts) run.acts.groups[group] = at::cat(parts, 0);
  return run;
}

}  // namespace fsq
