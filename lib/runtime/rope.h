// Rotary position tables (HF rotate_half layout), with llama3 and linear frequency scaling.
// The model builds them for the positions actually used, not for max_position_embeddings
// (8192 for SmolLM2, 131072 for Llama-3.1, and whatever a malformed config claims).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <mutex>
#include <vector>

#include "formats/model_config.h"

namespace fsq {

// Rotary tables for positions [0, positions): cos/sin [positions, head_dim].
struct RopeTables {
  at::Tensor cos;
  at::Tensor sin;
};
// Throws fsq::Error on a rope_scaling type the runtime does not implement.
RopeTables make_rope_tables(const ModelConfig& cfg, int64_t positions, c10::ScalarType dtype, c10::Device device);

// Tables that grow on demand (rope_size.h says by how much). Thread-safe; a value at a
// given position is the same whatever the table's length, so growth never changes results.
class RotaryCache {
 public:
  // Checks rope_scaling now, so an unsupported type fails when the model loads.
  RotaryCache(const ModelConfig& cfg, c10::ScalarType dtype, c10::Device device);
  // Tables covering at least [0, end). Throws fsq::Error when end exceeds the config's
  // max_position_embeddings.
  RopeTables tables(int64_t end) const;
  int64_t positions() const;  // built so far

 private:
  std::vector<double> inverse_frequencies_;
  int64_t head_dim_;
  int64_t max_positions_;
  c10::ScalarType dtype_;
  c10::Device device_;
  mutable std::mutex mutex_;
  mutable RopeTables built_;
  mutable int64_t built_positions_ = 0;
};

}  // namespace fsq
