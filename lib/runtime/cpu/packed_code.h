// Reads one code of a packed row the way FORMAT.md defines it. For baseline-ISA files only
// (see uniform_isa.h for why the AVX files must not share inline functions).
#pragma once

#include <cstdint>

#include "runtime/cpu/uniform_kernels.h"

namespace fsq::cpu {

// Code j of a row of `bits`-bit codes; a 3-bit code may straddle two words.
inline uint32_t packed_code(const uint32_t* row, int64_t j, int bits) {
  const int64_t bit = j * bits;
  const auto shift = static_cast<uint32_t>(bit % 32);
  uint32_t v = row[bit / 32] >> shift;
  if (shift + static_cast<uint32_t>(bits) > 32) v |= row[bit / 32 + 1] << (32 - shift);
  return v & ((1u << bits) - 1);
}

// The zero point of group g of row r: stored (asymmetric) or 2^(bits-1) (symmetric).
inline int zero_point(const UniformWeightsView& w, int64_t r, int64_t g) {
  return w.zeros ? w.zeros[r * (w.cols / w.group_cols) + g] : 1 << (w.bits - 1);
}

}  // namespace fsq::cpu
