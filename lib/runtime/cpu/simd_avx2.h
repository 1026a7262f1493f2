// The float-vector operations shared by the AVX2 kernels (uniform_kernels_avx2.cpp,
// lut_kernels_avx2.cpp), which derive their Simd structs from avx2::VecOps. Include it only
// from TUs compiled with -mavx2 -mfma -mf16c: its inline functions are shared between
// those TUs alone, hence a namespace of their own (uniform_isa.h says why).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "runtime/cpu/exp_poly.h"

namespace fsq::cpu::avx2 {

struct VecOps {
  static constexpr int kLanes = 8;
  using Vec = __m256;

  // All-ones in lanes 0 .. n-1: the mask of maskload/maskstore.
  static __m256i first_lanes(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }

  static Vec zero() { return _mm256_setzero_ps(); }
  static Vec load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
  static void store_partial(float* p, Vec v, int n) { _mm256_maskstore_ps(p, first_lanes(n), v); }
  static Vec fmadd(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
  static Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
  static float reduce_add(Vec v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float half(uint16_t h) { return _cvtsh_ss(h); }
  static Vec set1(float v) { return _mm256_set1_ps(v); }
  static Vec load_partial(const float* p, int n) { return _mm256_maskload_ps(p, first_lanes(n)); }
  static Vec div(Vec a, Vec b) { return _mm256_div_ps(a, b); }
  // exp(x) for x <= 0 (NaN stays NaN; exp_poly.h): 2^n built in the exponent bits. The
  // clamp at -87 keeps 2^n normal: exp(-87) = 1.6e-38 stands for anything smaller.
  static Vec exp_nonpositive(Vec x) {
    x = _mm256_max_ps(_mm256_set1_ps(-87.0f), x);  // max returns its second operand for NaN
    const Vec n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    Vec r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2High), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Low), r);
    const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(exp_reduced<VecOps>(r), _mm256_castsi256_ps(bits));
  }
};

}  // namespace fsq::cpu::avx2
