#include "quantize/uniform_options.h"

#include "formats/quant/quant_types.h"
#include "quantize/quantize_model.h"

namespace fsq {

nlohmann::json uniform_byte_options(const QuantizeConfig& cfg) {
  nlohmann::json options = {{"quant_type", uniform_quant_name(cfg.quant)},
                            {"bits", cfg.quant.bits},
                            {"group_size", cfg.quant.group_size},
                            {"symmetric", cfg.quant.symmetric},
                            {"layer_inputs", cfg.quantized_inputs ? "quantized" : "fp"},
                            {"search_tokens", cfg.search_tokens}};
  if (cfg.pass_options.gptq) options["weights"] = "gptq";
  return options;
}

}  // namespace fsq
