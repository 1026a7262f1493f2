// --method squeezellm: Fisher-weighted per-row k-means lookup tables with a sparse part
// (squeezellm_layer.h); with --gptq the codes are chosen by GPTQ on the fp layer's inputs.
// A plan's 8-bit linears are stored as round-to-nearest int8 groups (GPTQ with --gptq):
// lookup tables pay off at 3 and 4 bits only.
#include "formats/quant/quant_types.h"
#include "formats/packed_checkpoint.h"
#include "quantize/method.h"
#include "quantize/quantize_model.h"
#include "quantize/rounding.h"
#include "quantize/squeezellm_layer.h"

namespace fsq {
namespace {

class SqueezeLlmMethod final : public QuantMethod {
 public:
  LayerOutcome quantize_layer(DecoderLayer& layer, const MethodContext& ctx) const override {
    LayerOutcome out;
    out.stored = quantize_layer_lut(layer, ctx.pass.arch, ctx.pass.layer, ctx.fisher, *ctx.lut,
                                    ctx.gptq ? &ctx.fp_inputs : nullptr, ctx.widths);
    if (ctx.widths && any_width_is(*ctx.widths, 8)) {
      GroupHessians hessians;
      if (ctx.gptq) hessians = group_hessians(ctx.fp_inputs, ctx.pass);
      round_layer(layer, ctx.pass, ctx.gptq ? &hessians : nullptr, {}, out.stored);
    }
    return out;
  }

  nlohmann::json byte_options(const QuantizeConfig& cfg) const override {
    nlohmann::json options = {{"quant_type", lut_quant_name(cfg.quant.bits)},
                              {"bits", cfg.quant.bits},
                              {"outlier_pct", cfg.lut.outlier_pct},
                              {"sensitive_pct", cfg.lut.sensitive_pct},
                              {"dense_only", cfg.lut.dense_only},
                              {"weighted", cfg.lut.weighted},
                              {"max_iterations", cfg.lut.max_iterations},
                              {"tolerance", cfg.lut.tolerance}};
    if (cfg.pass_options.gptq)
      options.update({{"weights", "gptq"}, {"layer_inputs", cfg.quantized_inputs ? "quantized" : "fp"}});
    return options;
  }

  // The uniform linears of a squeezellm checkpoint are its plan's 8-bit ones, round-to-nearest.
  void describe_linear(QuantizedLinearToWrite& linear, const StoredLayer&, const std::string&) const override {
    linear.method = "rtn";
  }
};

}  // namespace

std::unique_ptr<QuantMethod> make_squeezellm_method(const PassOptions&) {
  return std::make_unique<SqueezeLlmMethod>();
}

}  // namespace fsq
