// What `fsq quantize` will do before it does it: layers, passes, predicted peak memory of
// streaming plus calibration activations, and the output size. The run refuses to start
// when the prediction exceeds the memory limit.
#pragma once

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/quant/uniform_quant.h"
#include "formats/quant/w8a8_quant.h"

namespace fsq {

class Checkpoint;
struct ArchSpec;

struct QuantizeShape {
  std::string method;
  bool calibrated = false;
  UniformQuant quant;
  int64_t samples = 0, seq_len = 0, batch = 0;
  // LUT methods (SqueezeLLM): code bits (0: a uniform method), the expected share of weights
  // in the sparse part, and the calibration file mapped for its Fisher diagonals.
  int lut_bits = 0;
  ActivationQuant act_quant = ActivationQuant::None;  // W8A8 types (quant is then kW8A8Weights)
  double sparse_fraction = 0;
  int64_t fisher_file_bytes = 0;
  // Predicted peak of the Fisher pass when quantize runs it first (0: it does not).
  int64_t fisher_pass_bytes = 0;
  int head_bits = 16;  // --head-bits: 16 keeps the embedding and head as in the source
  // A calibrated pass that searches on block outputs (awq, smoothquant): it holds a reference
  // and a candidate output and runs whole-block forwards. false: the calibration windows only
  // feed GPTQ's Hessians (rtn, squeezellm --gptq), one layer forward at a time.
  bool searches = true;
  bool gptq = false;  // GPTQ rounding: each group's Hessian, and its inverse in double

  std::string quant_name() const;  // "w4g128a", "lut4" or "w8a8"
};

struct QuantizePlan {
  int64_t layers = 0, linears = 0;
  int64_t quantized_parameters = 0, dense_parameters = 0;
  double bits_per_weight = 0;      // of the quantized linears (codes + scales + zeros)
  int64_t output_bytes = 0;        // model.safetensors, approximately (padding excluded)
  int64_t source_bytes = 0;
  // Peak host memory terms (bytes). The layer loop (layer, activations, search, GPTQ and the
  // calibration working set) and the writing of the output (one group at a time: `assembled`)
  // never overlap: the allocator reuses the loop's freed heap, so the peak takes the larger.
  int64_t runtime = 0, shell = 0, layer = 0, activations = 0, search = 0, calibration_runtime = 0,
          assembled = 0, gptq = 0;
  int64_t fisher_pass = 0;  // the Fisher pass run before the layer loop (its own anonymous peak)
  int64_t shell_load = 0;   // held besides the shell while it loads (with its source pages mapped)
  // Tensors written as they are in the source (embedding, head, norms): name -> bytes.
  std::vector<std::pair<std::string, int64_t>> not_quantized;
  // The embedding/head when --head-bits quantizes them: their type, weights and packed bytes.
  std::string head_type;
  int64_t head_parameters = 0, head_bytes = 0;
  int64_t layer_loop() const { return layer + activations + search + gptq + calibration_runtime; }
  // Mapped source pages (the kernel reclaims them under pressure, so they are reported but
  // never refused): one layer's while it is copied (LlamaModel::load_layer then gives them
  // back), the tensors read whole at the end (embedding, head, ...), and the Fisher diagonals'
  // file, mapped for the whole run.
  int64_t mapped_layer = 0, mapped_whole = 0, mapped_fisher = 0;
  // Anonymous memory (heap, LibTorch tensors): what --max-memory limits, since the kernel
  // cannot page it out here (no swap).
  // The shell (embedding, head) lives through the layer loop only: writing comes after.
  int64_t anonymous_peak() const {
    return std::max({fisher_pass, runtime + shell + shell_load, runtime + shell + layer_loop(), runtime + assembled});
  }
  int64_t mapped_peak() const { return std::max(mapped_layer, mapped_whole) + mapped_fisher; }
  // Both, at the moment they add up to the most: peak RSS.
  // (Loading the shell reads the embedding and head pages: mapped_whole is resident then too.)
  int64_t peak() const {
    return mapped_fisher + std::max({fisher_pass + mapped_layer, runtime + shell + shell_load + mapped_whole,
                                     runtime + shell + layer_loop() + mapped_layer, runtime + assembled + mapped_whole});
  }
  int64_t not_quantized_bytes() const;
  nlohmann::json not_quantized_json() const;  // {"tensors": [{name, bytes}], "bytes", "share_of_output"}
  std::string not_quantized_text() const;
  nlohmann::json to_json() const;
  std::string to_text(const QuantizeShape& shape) const;
};

QuantizePlan plan_quantize(const Checkpoint& ckpt, const QuantizeShape& shape);

// "model.layers.N.<...>.q_proj.weight" etc.: the weights the passes quantize.
std::set<std::string> linear_weight_names(const ArchSpec& arch, int64_t layers);

}  // namespace fsq
