#include "quantize/intonly_ranges.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "runtime/model.h"

namespace fsq {
namespace {

class RangeTap final : public LayerTap {
 public:
  void group_input(const std::string&, const at::Tensor&) override {}
  void range_point(IntonlyRange which, const at::Tensor& x) override {
    float& r = ranges[static_cast<size_t>(which)];
    r = std::max(r, x.abs().max().item<float>());
  }
  std::vector<float> ranges = std::vector<float>(kIntonlyRangeCount, kMinIntonlyRange);
};

}  // namespace

IntonlyRangeRun measure_intonly_ranges(const DecoderLayer& layer, const at::Tensor& hidden, const RopeTables& rope,
                                       const ModelConfig& cfg, int64_t index, int64_t batch) {
  at::NoGradGuard no_grad;
  RangeTap tap;
  std::vector<at::Tensor> outputs;
  for (int64_t b = 0; b < hidden.size(0); b += batch) {
    const at::Tensor hb = hidden.narrow(0, b, std::min(batch, hidden.size(0) - b));
    outputs.push_back(layer.forward(hb, rope, cfg, 0, nullptr, index, &tap));
  }
  return {tap.ranges, at::cat(outputs, 0)};
}

}  // namespace fsq
