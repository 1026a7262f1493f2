// A CSR row's dot product with x in scalar FMAs, for rows of few nonzeros, shared by the
// AVX-512 LUT ops (lut_avx512_ops.h) and the AVX2 int8-activation LUT GEMV (lut_q8_avx2.cpp).
// Internal linkage only, so each ISA file gets its own copy compiled with its flags
// (uniform_isa.h says why).
#pragma once

#include <cstdint>

namespace fsq::cpu {
namespace {

// sum_e x[col[e]] * half(val[e]) in four independent chains (one chain waited ~4 cycles per
// nonzero on the FMA), added pairwise at the end. The builtin, not std::fma: no inline
// function shared with baseline code.
template <typename Half, typename Col>
inline float sparse_dot_four_chains(const float* x, const Col* col, const uint16_t* val, int64_t count, Half half) {
  float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  int64_t e = 0;
  for (; e + 4 <= count; e += 4)
    for (int j = 0; j < 4; ++j) s[j] = __builtin_fmaf(x[col[e + j]], half(val[e + j]), s[j]);
  for (; e < count; ++e) s[0] = __builtin_fmaf(x[col[e]], half(val[e]), s[0]);
  return (s[0] + s[1]) + (s[2] + s[3]);
}

}  // namespace
}  // namespace fsq::cpu
