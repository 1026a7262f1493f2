// `fsq quantize` as a library call: plan, then stream the model one decoder layer at a
// time (fp layer -> calibration group inputs -> pass -> quantize -> save the layer), then
// assemble and write the packed checkpoint atomically. Resumable (layer_store.h).
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "calib/dataset.h"
#include "formats/quant/uniform_quant.h"
#include "formats/shard_plan.h"
#include "quantize/head_quant.h"
#include "quantize/pass.h"
#include "quantize/quantize_plan.h"
#include "quantize/squeezellm/lut_quantizer.h"
#include "runtime/model.h"

namespace fsq {

struct QuantizeConfig {
  std::filesystem::path model;  // HF checkpoint folder
  std::filesystem::path out;    // packed checkpoint folder to create
  std::string method = "awq";
  UniformQuant quant{4, 128, false};
  // The embedding and head (quantize/head_quant.h): 8 or 4 bits, or 16 to keep them as in the
  // source.
  int head_bits = kDefaultHeadBits;
  std::optional<std::filesystem::path> calib_data;  // required by calibrated methods
  // SqueezeLLM (--method squeezellm): the calibration file holding Fisher diagonals (fsq
  // calibrate --fisher); without one, run_quantize runs the Fisher pass itself on calib_data.
  std::optional<std::filesystem::path> calib_file;
  squeezellm::LutOptions lut;  // lut.bits is taken from quant.bits
  // Mixed precision (fsq quantize --plan): the width of each decoder layer (layer_bits) or
  // of each linear (linear_bits: per layer, role -> bits), replacing
  // quant.bits (and lut.bits); both empty: every linear at quant.bits. At most one is set.
  std::vector<int> layer_bits;
  std::vector<std::map<std::string, int>> linear_bits;
  std::string layer_bits_model_sha256;  // the plan's model; non-empty: must be this model's
  bool has_plan() const { return !layer_bits.empty() || !linear_bits.empty(); }
  // SmoothQuant's alpha and activation quantization (--method smoothquant, which ignores
  // `quant`: its weights are always kW8A8Weights).
  PassOptions pass_options;
  WindowDraw draw;
  int64_t batch_size = 8;   // windows per fp layer forward and per block forward in searches
  // Which activations calibrate layer i + 1: the fp model's (AutoAWQ's choice) or those of
  // the layers already quantized (GPTQ's choice: later layers are searched on the inputs
  // they will really see, which matters when the rounding error is large, e.g. 2 bits).
  bool quantized_inputs = true;
  int64_t search_tokens = 8192;  // PassContext::search_tokens
  RuntimeOptions runtime;
  int64_t max_memory = 0;   // bytes; 0: this machine's physical memory
  uint64_t max_shard_bytes = kDefaultMaxShardBytes;  // --max-shard-size (formats/shard_plan.h)
  bool dry_run = false;
  bool resume = true;
  int threads = 1;
  // Who runs the pass ({"name", "version", "commit"}), recorded in fsq.json and in the
  // resume fingerprint (layers saved by another build are not mixed in); null: not recorded.
  nlohmann::json producer;
  // Testing hook: throw after this many layers were quantized and saved (-1: never), to
  // exercise resuming without killing a process.
  int64_t stop_after_layers = -1;
};

struct QuantizeSummary {
  QuantizeShape shape;
  QuantizePlan plan;
  bool dry_run = false;
  int64_t resumed_layers = 0;
  double seconds = 0;
  int64_t peak_rss_bytes = 0;  // measured at the end of the run
  nlohmann::json layer_reports = nlohmann::json::array();
  nlohmann::json to_json() const;
};

// `log` receives human-readable lines (the plan, resume decisions); the tool prints them.
// Throws fsq::Error on bad input before any long work, and when the predicted peak memory
// exceeds the limit.
QuantizeSummary run_quantize(const QuantizeConfig& config, const std::function<void(const std::string&)>& log);

}  // namespace fsq
