#include "formats/quant/w8a8_quant.h"

#include "common/error.h"

namespace fsq {
namespace {

constexpr std::string_view kPerTokenName = "w8a8";
constexpr std::string_view kPerTensorName = "w8a8static";
constexpr std::string_view kPerBlockName = "w8a8b32";
constexpr int kChannelScaleBits = 16;  // fp16 scale per output channel

}  // namespace

std::string w8a8_quant_name(ActivationQuant mode) {
  switch (mode) {
    case ActivationQuant::PerToken: return std::string(kPerTokenName);
    case ActivationQuant::PerTensor: return std::string(kPerTensorName);
    case ActivationQuant::PerBlock: return std::string(kPerBlockName);
    case ActivationQuant::None: break;
  }
  throw Error("quant type", "a weight-only linear has no W8A8 type name");
}

ActivationQuant w8a8_mode_of(std::string_view quant_type) {
  if (quant_type == kPerTokenName) return ActivationQuant::PerToken;
  if (quant_type == kPerTensorName) return ActivationQuant::PerTensor;
  if (quant_type == kPerBlockName) return ActivationQuant::PerBlock;
  return ActivationQuant::None;
}

const char* activation_quant_label(ActivationQuant mode) {
  switch (mode) {
    case ActivationQuant::PerToken: return "per-token";
    case ActivationQuant::PerTensor: return "per-tensor";
    case ActivationQuant::PerBlock: return "per-block";
    case ActivationQuant::None: break;
  }
  return "none";
}

bool parse_activation_quant(std::string_view label, ActivationQuant* mode) {
  for (ActivationQuant m : {ActivationQuant::PerToken, ActivationQuant::PerTensor, ActivationQuant::PerBlock}) {
    if (label == activation_quant_label(m)) {
      *mode = m;
      return true;
    }
  }
  return false;
}

double w8a8_bits_per_weight(int64_t cols) {
  if (cols <= 0) throw Error("quant type", "a row needs at least one column");
  return kW8A8Weights.bits + static_cast<double>(kChannelScaleBits) / static_cast<double>(cols);
}

}  // namespace fsq
