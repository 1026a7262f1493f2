// --method rtn: round-to-nearest, the data-free baseline; with --gptq the same groups are
// rounded by GPTQ on the layer's calibration inputs.
#include "quantize/method.h"
#include "quantize/quantize_model.h"
#include "quantize/rounding.h"
#include "quantize/uniform_options.h"

namespace fsq {
namespace {

class RtnMethod final : public QuantMethod {
 public:
  LayerOutcome quantize_layer(DecoderLayer& layer, const MethodContext& ctx) const override {
    LayerOutcome out;
    GroupHessians hessians;
    if (ctx.gptq) hessians = group_hessians(ctx.fp_inputs, ctx.pass);
    round_layer(layer, ctx.pass, ctx.gptq ? &hessians : nullptr, {}, out.stored);
    return out;
  }
  nlohmann::json byte_options(const QuantizeConfig& config) const override { return uniform_byte_options(config); }
};

}  // namespace

std::unique_ptr<QuantMethod> make_rtn_method(const PassOptions&) { return std::make_unique<RtnMethod>(); }

}  // namespace fsq
