#include <ATen/ATen.h>

#include "common/error.h"
#include "formats/packed_checkpoint.h"
#include "formats/quant/w8a8_quant.h"
#include "quantize/quantize_model.h"
#include "quantize/rounding.h"
#include "quantize/smoothquant.h"
#include "quantize/smoothquant_pass.h"
#include "quantize/w8a8_method.h"

namespace fsq {

LayerOutcome W8A8Method::quantize_layer(DecoderLayer& layer, const MethodContext& ctx) const {
  const std::optional<double> alpha = smooth_ ? options_.smooth_alpha : std::nullopt;
  PassResult result = SmoothQuantPass(alpha, options_.act_quant, smooth_, options_.gptq).run(layer, ctx.fp_inputs, ctx.pass);
  const GroupHessians hessians = std::move(result.gptq_hessians);
  LayerOutcome out;
  round_layer(layer, ctx.pass, options_.gptq ? &hessians : nullptr, std::move(result), out.stored);
  return out;
}

nlohmann::json W8A8Method::byte_options(const QuantizeConfig& cfg) const {
  const PassOptions& p = cfg.pass_options;
  nlohmann::json options = {{"quant_type", w8a8_quant_name(p.act_quant)},
                            {"act_quant", activation_quant_label(p.act_quant)},
                            {"layer_inputs", cfg.quantized_inputs ? "quantized" : "fp"},
                            {"search_tokens", cfg.search_tokens}};
  if (p.gptq) options["weights"] = "gptq";  // absent: round to nearest
  if (takes_alpha_) options["alpha"] = p.smooth_alpha ? nlohmann::json(*p.smooth_alpha) : nlohmann::json("auto");
  return options;
}

// A W8A8 linear: its activation quantization and, static, the scale from calibration.
void W8A8Method::describe_linear(QuantizedLinearToWrite& linear, const StoredLayer& stored,
                                 const std::string& role) const {
  QuantMethod::describe_linear(linear, stored, role);
  linear.act_quant = options_.act_quant;
  if (linear.act_quant != ActivationQuant::PerTensor) return;
  const auto it = stored.vectors.find(role + kInputAbsmaxKey);
  if (it == stored.vectors.end() || it->second.size() != 1)
    throw Error(linear.name, "the pass recorded no input range for a static activation scale");
  linear.input_scale = static_activation_scale(it->second[0]);
}

std::unique_ptr<QuantMethod> make_smoothquant_method(const PassOptions& o) {
  return std::make_unique<W8A8Method>(o, /*smooth=*/true, /*takes_alpha=*/true);
}

std::unique_ptr<QuantMethod> make_w8a8_method(const PassOptions& o) {
  return std::make_unique<W8A8Method>(o, /*smooth=*/false, /*takes_alpha=*/false);
}

}  // namespace fsq
