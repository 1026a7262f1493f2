// Predicted peak host memory of `fsq calibrate` (see lib/calib/README.md for the formula).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace fsq {

struct ModelConfig;

struct CalibrationMemory {
  int64_t runtime = 0;      // process, LibTorch and BLAS libraries
  int64_t checkpoint = 0;   // the source tensors (mapped file pages or a GGUF's dequantized copy)
  int64_t shell = 0;        // embedding, head and rotary tables kept for the whole run
  // One decoder layer loaded (x3 with Fisher: leaves, sums, gradients; the sums go to the
  // file when the layer is done, so no other layer's are held).
  int64_t layer = 0;
  int64_t activations = 0;  // hidden states on the host: 2 copies, or every layer's input with Fisher
  int64_t work = 0;         // one forward batch (stats) or one sample's autograd graph (Fisher)
  int64_t total() const { return runtime + checkpoint + shell + layer + activations + work; }
  nlohmann::json to_json() const;
};

struct CalibrationShape {
  int64_t samples = 0;
  int64_t seq_len = 0;
  int64_t batch_size = 0;
  int64_t compute_bytes = 4;     // bytes per activation element
  int64_t checkpoint_bytes = 0;  // bytes of the source tensors
  bool fisher = false;
};

CalibrationMemory predict_calibration_memory(const ModelConfig& cfg, const CalibrationShape& shape);

}  // namespace fsq
