// silu_mul's loop over a VecOps (simd_avx2.h, simd_avx512.h) with its ISA's masked tail
// (Ops::load_partial/store_partial). Internal linkage: include only from silu_avx2.cpp and
// silu_avx512.cpp (uniform_isa.h says why).
//
// sigmoid(g) from e = exp(-|g|), whose argument is never positive (no overflow): 1 / (1 + e)
// for g >= 0, e / (1 + e) below. NaN stays NaN.
#pragma once

#include <cstdint>

namespace fsq::cpu {
namespace {

template <typename Ops>
__attribute__((always_inline)) inline typename Ops::Vec silu_mul_vec(typename Ops::Vec g, typename Ops::Vec up) {
  const typename Ops::Vec e = Ops::exp_nonpositive(Ops::neg_abs(g));
  const typename Ops::Vec numerator = Ops::select_nonnegative(g, Ops::set1(1.0f), e);
  return Ops::mul(Ops::mul(g, Ops::div(numerator, Ops::add(Ops::set1(1.0f), e))), up);
}

template <typename Ops>
void silu_mul_loop(float* gate, const float* up, int64_t n) {
  constexpr int64_t L = Ops::kLanes;
  int64_t i = 0;
  for (; i + L <= n; i += L) Ops::store(gate + i, silu_mul_vec<Ops>(Ops::load(gate + i), Ops::load(up + i)));
  if (i < n) {
    const int left = static_cast<int>(n - i);
    Ops::store_partial(gate + i, silu_mul_vec<Ops>(Ops::load_partial(gate + i, left), Ops::load_partial(up + i, left)),
                       left);
  }
}

}  // namespace
}  // namespace fsq::cpu
