// exp(x) in float vectors for the SIMD kernels (decode attention's softmax, the decode
// MLP's SiLU): x = n ln 2 + r with |r| <= ln(2)/2, exp(r) by polynomial, times 2^n (each
// ISA's VecOps::exp_nonpositive: simd_avx2.h, simd_avx512.h). Internal linkage and plain
// constants: include only from the SIMD headers and files (uniform_isa.h says why).
#pragma once

namespace fsq::cpu {
namespace {

// exp(r) on |r| <= ln(2)/2 as its Taylor polynomial to degree 7: the remainder is below
// 1e-8 relative there, so Horner's roundings dominate: 0.94 ulp at most over every float in
// [-87, 0] against double exp (checked exhaustively, both ISAs; libm's expf: 0.50).
constexpr float kExpTaylor[] = {1.0f, 1.0f, 1.0f / 2, 1.0f / 6, 1.0f / 24, 1.0f / 120, 1.0f / 720, 1.0f / 5040};
// ln 2 in two parts (Cody and Waite): n * kLn2High is exact for |n| < 2^9.
constexpr float kLn2High = 0.693359375f, kLn2Low = -2.12194440e-4f, kLog2e = 1.44269504f;

// p(r) ~ exp(r) for the reduced argument, Horner from the top coefficient.
template <typename Ops>
typename Ops::Vec exp_reduced(typename Ops::Vec r) {
  typename Ops::Vec p = Ops::set1(kExpTaylor[7]);
  for (int k = 6; k >= 0; --k) p = Ops::fmadd(p, r, Ops::set1(kExpTaylor[k]));
  return p;
}

}  // namespace
}  // namespace fsq::cpu
