// Quantizer passes. A pass gets one decoder layer (dense fp32 weights, a private copy it
// may rewrite: AWQ folds scales into norms and linears) and, when it needs calibration,
// the inputs of the layer's linear groups. After it returns, the pipeline quantizes every
// linear's current weight with the chosen UniformQuant and stores the layer's norms and
// biases as they now are. Passes are listed in one table (quant_passes()).
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/quant/uniform_quant.h"

namespace fsq {

struct ArchSpec;
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

  // The quant type of a linear with `cols` inputs (quant_for_columns: group-size fallback).
  UniformQuant quant_for(int64_t cols) const;
};

class QuantPass {
 public:
  virtual ~QuantPass() = default;
  // Rewrites `layer` in place (or not); returns a JSON report of what it chose.
  virtual nlohmann::json run(DecoderLayer& layer, const LayerActivations& acts, const PassContext& ctx) const = 0;
};

struct PassInfo {
  std::string name;
  std::string description;
  bool needs_calibration = false;  // runs calibration windows through the layers
  std::function<std::unique_ptr<QuantPass>()> make;
  // Writes LUT types (SqueezeLLM): the pipeline quantizes with quantize_layer_lut from the
  // Fisher diagonals of a calibration file instead of uniform groups.
  bool lookup_table = false;
};

const std::vector<PassInfo>& quant_passes();
// Throws fsq::Error naming --method and listing the passes when `name` is unknown.
const PassInfo& find_quant_pass(const std::string& name);

}  // namespace fsq
