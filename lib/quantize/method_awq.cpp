// --method awq: the AWQ pass (awq_pass.h: scale search, folds, clip search) on the fp layer's
// calibration inputs, then rounding; with --gptq, GPTQ on the inputs of the layer as the
// folds left it (they rescale the inputs).
#include "quantize/awq_pass.h"
#include "quantize/method.h"
#include "quantize/rounding.h"
#include "quantize/uniform_options.h"

namespace fsq {
namespace {

class AwqMethod final : public QuantMethod {
 public:
  LayerOutcome quantize_layer(DecoderLayer& layer, const MethodContext& ctx) const override {
    LayerOutcome out;
    PassResult result = AwqPass().run(layer, ctx.fp_inputs, ctx.pass);
    GroupHessians hessians;
    if (ctx.gptq) hessians = group_hessians(ctx.rerun_inputs(layer), ctx.pass);
    round_layer(layer, ctx.pass, ctx.gptq ? &hessians : nullptr, std::move(result), out.stored);
    return out;
  }
  nlohmann::json byte_options(const QuantizeConfig& config) const override { return uniform_byte_options(config); }
};

}  // namespace

std::unique_ptr<QuantMethod> make_awq_method(const PassOptions&) { return std::make_unique<AwqMethod>(); }

}  // namespace fsq
