// How many positions a rotary table holds, and its bytes, without LibTorch: the memory
// plans count the tables the runtime will really build.
#pragma once

#include <algorithm>
#include <cstdint>

namespace fsq {

// Positions after a request for [0, end) when `current` are built: at least doubled on
// growth (a generation that asks one position more each step rebuilds O(log n) times),
// never past the model's max_position_embeddings.
inline int64_t rope_table_positions(int64_t end, int64_t current, int64_t max_positions) {
  if (end <= current) return current;
  return std::min(max_positions, std::max(end, 2 * current));
}

// cos and sin tables, [positions, head_dim] each.
inline int64_t rope_table_bytes(int64_t positions, int64_t head_dim, int64_t element_bytes) {
  return 2 * positions * head_dim * element_bytes;
}

}  // namespace fsq
