// How far apart two f32 computations of the same value may land when they sum in different
// orders: another CPU's BLAS kernel, another blocking, a batched versus a one-at-a-time
// forward. Bounds derived from the arithmetic, not measured on one machine.
#pragma once

#include <cstdint>

namespace fsq::testing {

// f32 unit roundoff u = 2^-24 (half of FLT_EPSILON): one rounding moves a value by at most u
// relative.
inline constexpr double kF32UnitRoundoff = 0x1p-24;

// A length-k sum or dot product in f32, in any order, is within gamma_k ~ k*u of the exact
// value relative to the sum of its terms' magnitudes (Higham, Accuracy and Stability of
// Numerical Algorithms, 2nd ed., section 3.1). A value that flows through `depth` such steps
// (layers of a model) gathers at most their sum: depth * k * u, with k the longest reduction.
// Terms of mixed sign can cancel and beat it in principle; the random tiny models here have no
// systematic cancellation, so the bound stands as a tolerance relative to the largest value.
inline constexpr double f32_chain_bound(int64_t depth, int64_t longest_reduction) {
  return static_cast<double>(depth) * static_cast<double>(longest_reduction) * kF32UnitRoundoff;
}

}  // namespace fsq::testing
