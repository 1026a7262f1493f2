// Quantizer passes: the layer transforms methods are built from (method.h). A pass gets one
// decoder layer (dense fp32 weights, a private copy it may rewrite: AWQ folds scales into
// norms and linears) and, when it needs calibration, the inputs of the layer's linear groups.
// After it returns, the method's rounding stage (rounding.h) quantizes every linear's current
// weight with the chosen UniformQuant and stores the layer's norms and biases as they now are.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/quant/uniform_quant.h"
#include "formats/quant/w8a8_quant.h"
#include "quantize/fake_quant.h"

namespace fsq {

struct ArchSpec;
class CalibrationFile;
struct DecoderLayer;
struct ModelConfig;
struct RopeTables;

// Calibration activations of one layer, on the compute device.
struct LayerActivations {
  std::map<std::string, at::Tensor> groups;  // ArchSpec group name -> [N, T, channels]
};

struct PassContext {
  const ModelConfig& config;
  const ArchSpec& arch;
  const RopeTables& rope;
  int64_t layer = 0;
  UniformQuant quant;
  int64_t block_batch = 8;  // windows per block forward inside searches (bounds memory)
  // Calibration tokens each search forward may use (0: all). A pass takes whole windows
  // where its block needs them (attention), evenly spread tokens otherwise.
  int64_t search_tokens = 8192;

  // Per-channel input statistics from a calibration file (fsq calibrate), for passes that can
  // work from them when the pipeline runs no calibration windows (SmoothQuant, fixed alpha).
  const CalibrationFile* activation_stats = nullptr;

  // Per-linear widths from a plan (fsq quantize --plan): role -> bits, or 0 for a linear the
  // pipeline does not round to a uniform type here (kept fp16, or a LUT in a squeezellm
  // plan). Empty: every linear at quant.bits.
  std::map<std::string, int> role_bits{};

  // The quant type of a linear with `cols` inputs (quant_for_columns: group-size fallback).
  UniformQuant quant_for(int64_t cols) const;
  // Linear `role`'s width: role_bits' when it has one, else quant.bits.
  int bits_for(const std::string& role) const;
  // The quant type of linear `role` (at bits_for(role)) with `cols` inputs.
  UniformQuant quant_for(const std::string& role, int64_t cols) const;
  // Whether the pipeline rounds linear `role` to a uniform type (role_bits is not 0).
  bool rounds(const std::string& role) const;
};

struct PassResult {
  nlohmann::json report = nlohmann::json::object();  // what the pass chose
  // Passes that quantize activations statically: the largest |input| each linear (by role)
  // will see, measured on the calibration set after the pass's rewrite.
  std::map<std::string, float> input_absmax;
  // Linears (by role) already quantized (GPTQ), in the layer's quant type
  // (PassContext::quant_for); the rounding stage stores these instead of rounding the weights.
  std::map<std::string, GroupQuantized> quantized;
  // Linear group name -> GPTQ's Hessian of the inputs the pass left the group (SmoothQuant's
  // smoothed inputs), when asked to record them (--gptq).
  std::map<std::string, at::Tensor> gptq_hessians;
};

class QuantPass {
 public:
  virtual ~QuantPass() = default;
  // Rewrites `layer` in place (or not).
  virtual PassResult run(DecoderLayer& layer, const LayerActivations& acts, const PassContext& ctx) const = 0;
};

// Options of the passes that have any (the CLI's --alpha, --act-quant).
struct PassOptions {
  std::optional<double> smooth_alpha = 0.5;  // SmoothQuant's alpha; nullopt: searched per group
  ActivationQuant act_quant = ActivationQuant::PerToken;
  // W8A8 passes: int8 weights by GPTQ on the calibration inputs instead of round-to-nearest.
  bool gptq = false;
};

}  // namespace fsq
