// --method intonly (I-BERT for LLaMA): SmoothQuant with static per-tensor int8 activations
// (w8a8_method.h), plus the ranges of every activation the integer decoder layer requantizes
// to, measured on the layer as stored over the calibration windows (intonly_ranges.h).
#include "quantize/intonly_ranges.h"
#include "quantize/quantize_model.h"
#include "quantize/stored_values.h"
#include "quantize/w8a8_method.h"

namespace fsq {
namespace {

class IntonlyMethod final : public W8A8Method {
 public:
  explicit IntonlyMethod(const PassOptions& o) : W8A8Method(o, /*smooth=*/true, /*takes_alpha=*/true) {}

  LayerOutcome quantize_layer(DecoderLayer& layer, const MethodContext& ctx) const override {
    LayerOutcome out = W8A8Method::quantize_layer(layer, ctx);
    // The ranges of the layer as stored, on the inputs it sees; with quantized layer inputs
    // that run's output also feeds the next layer.
    use_stored_values(layer, ctx.pass.arch, out.stored);
    IntonlyRangeRun ranges =
        measure_intonly_ranges(layer, ctx.hidden, ctx.pass.rope, ctx.pass.config, ctx.pass.layer, ctx.pass.block_batch);
    out.stored.vectors[kIntonlyRangesKey] = ranges.ranges;
    out.stored.report["intonly_ranges"] = ranges.ranges;
    if (ctx.config.quantized_inputs) out.next_hidden = ranges.output;
    return out;
  }
};

}  // namespace

std::unique_ptr<QuantMethod> make_intonly_method(const PassOptions& o) { return std::make_unique<IntonlyMethod>(o); }

}  // namespace fsq
