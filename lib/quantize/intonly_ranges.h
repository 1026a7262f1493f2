// Calibration of the integer-only path's static ranges (--method intonly): one decoder layer,
// as it will be stored (smoothed norms, dequantized int8 weights), runs over every
// calibration window while a tap keeps the largest |value| of each activation the integer
// path requantizes to (formats/packed_checkpoint.h IntonlyRange; FORMAT.md).
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace fsq {

struct DecoderLayer;
struct ModelConfig;
struct RopeTables;

struct IntonlyRangeRun {
  std::vector<float> ranges;  // [kIntonlyRangeCount], every value >= kMinIntonlyRange
  at::Tensor output;          // the layer's output [N, T, hidden] (the next layer's input)
};

// Stored ranges are floored here so the reader's "finite and > 0" holds for a dead activation.
inline constexpr float kMinIntonlyRange = 1e-8f;

// hidden [N, T, hidden]: the layer input; runs `batch` windows at a time.
IntonlyRangeRun measure_intonly_ranges(const DecoderLayer& layer, const at::Tensor& hidden, const RopeTables& rope,
                                       const ModelConfig& cfg, int64_t index, int64_t batch);

}  // namespace fsq
