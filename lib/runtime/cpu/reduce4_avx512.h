// The lane sums of four AVX-512 float vectors in one transposing reduction, shared by the
// kernels that sum several rows or keys at once (uniform_q8_loops.h, decode attention).
// Internal linkage and intrinsics: include only from files compiled with the AVX-512 flags
// (uniform_isa.h says why).
#pragma once

#include <immintrin.h>

namespace fsq::cpu {
namespace {

// The sums of the 16 lanes of each of v[0..3], in lanes 0..3.
__attribute__((always_inline)) inline __m128 reduce_add4_avx512(const __m512 v[4]) {
  const __m512 s01 = _mm512_add_ps(_mm512_unpacklo_ps(v[0], v[1]), _mm512_unpackhi_ps(v[0], v[1]));
  const __m512 s23 = _mm512_add_ps(_mm512_unpacklo_ps(v[2], v[3]), _mm512_unpackhi_ps(v[2], v[3]));
  const __m512 s = _mm512_add_ps(
      _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(s01), _mm512_castps_pd(s23))),
      _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(s01), _mm512_castps_pd(s23))));
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(s), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1)));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

}  // namespace
}  // namespace fsq::cpu
