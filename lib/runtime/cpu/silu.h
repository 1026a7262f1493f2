// The decode MLP's activation, gate[i] = silu(gate[i]) * up[i] = gate / (1 + exp(-gate)) *
// up, for the fast decode path (runtime/fast_decode.cpp). A libm expf per element was 10-40 %
// of a SmolLM2 decode step at 1 thread (1536 x 30 calls per token); the SIMD versions compute
// exp in vectors (exp_poly.h). Raw pointers only; no LibTorch.
#pragma once

#include <cstdint>

#include "runtime/cpu/cpu_isa.h"

namespace fsq::cpu {

// The spec: the formula above in float with libm's expf, element by element.
void silu_mul_reference(float* gate, const float* up, int64_t n);

// The same, SIMD per isa (scalar: the spec). Finite inputs agree with the spec within
// kSiluMulUlps ulps of the result plus kSiluMulTiny * |up|: below gate = -87 silu(gate) is
// under 1.5e-36 and AVX2's exp stops at exp(-87).
void silu_mul(float* gate, const float* up, int64_t n, CpuIsa isa);

// exp within 1 ulp, 1 + e, the division or the sigmoid's e / (1 + e), and two products
// each 0.5 ulp, against the spec's own ~2 ulps: 6 ulps with room.
inline constexpr double kSiluMulUlps = 8.0;
inline constexpr double kSiluMulTiny = 1e-35;

}  // namespace fsq::cpu
