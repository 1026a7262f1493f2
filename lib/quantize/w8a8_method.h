// The W8A8 methods (smoothquant, w8a8, intonly): the SmoothQuant pass (smoothquant_pass.h,
// smoothing off for naive w8a8) and int8 weights per output channel, rounded to nearest or
// by GPTQ on the smoothed inputs; each linear's activation quantization recorded for the
// runtime. intonly (method_intonly.cpp) adds its calibrated ranges.
#pragma once

#include "quantize/method.h"

namespace fsq {

class W8A8Method : public QuantMethod {
 public:
  W8A8Method(const PassOptions& options, bool smooth, bool takes_alpha)
      : options_(options), smooth_(smooth), takes_alpha_(takes_alpha) {}
  LayerOutcome quantize_layer(DecoderLayer& layer, const MethodContext& ctx) const override;
  nlohmann::json byte_options(const QuantizeConfig& config) const override;
  void describe_linear(QuantizedLinearToWrite& linear, const StoredLayer& stored, const std::string& role) const override;

 private:
  PassOptions options_;
  bool smooth_ = true;
  bool takes_alpha_ = true;
};

}  // namespace fsq
