// The float-vector operations shared by the AVX-512 kernels (uniform_kernels_avx512.cpp,
// lut_kernels_avx512.cpp), which derive their Simd structs from avx512::VecOps. Include it
// only from TUs compiled with the AVX-512 flags: its inline functions are shared between
// those TUs alone, hence a namespace of their own (uniform_isa.h says why).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "runtime/cpu/exp_poly.h"

namespace fsq::cpu::avx512 {

struct VecOps {
  static constexpr int kLanes = 16;
  using Vec = __m512;

  static __mmask16 first_lanes(int n) { return static_cast<__mmask16>((1u << n) - 1); }

  static Vec zero() { return _mm512_setzero_ps(); }
  static Vec load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
  static void store_partial(float* p, Vec v, int n) { _mm512_mask_storeu_ps(p, first_lanes(n), v); }
  static Vec fmadd(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
  static Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
  static float reduce_add(Vec v) { return _mm512_reduce_add_ps(v); }
  static float half(uint16_t h) { return _cvtsh_ss(h); }
  static Vec set1(float v) { return _mm512_set1_ps(v); }
  static Vec load_partial(const float* p, int n) { return _mm512_maskz_loadu_ps(first_lanes(n), p); }
  static Vec div(Vec a, Vec b) { return _mm512_div_ps(a, b); }
  // exp(x) for x <= 0 (NaN stays NaN; exp_poly.h): 2^n by vscalefps (exact, denormal and
  // zero results included). Below -104 exp is 0 in float; the clamp keeps n finite.
  static Vec exp_nonpositive(Vec x) {
    x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);  // max returns its second operand for NaN
    const Vec n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    Vec r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2High), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Low), r);
    return _mm512_scalef_ps(exp_reduced<VecOps>(r), n);
  }
};

}  // namespace fsq::cpu::avx512
