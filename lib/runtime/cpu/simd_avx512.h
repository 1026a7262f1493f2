// The float-vector operations shared by the AVX-512 kernels (uniform_kernels_avx512.cpp,
// lut_kernels_avx512.cpp), which derive their Simd structs from avx512::VecOps. Include it
// only from TUs compiled with the AVX-512 flags: its inline functions are shared between
// those TUs alone, hence a namespace of their own (uniform_isa.h says why).
#pragma once

#include <immintrin.h>

#include <cstdint>

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
};

}  // namespace fsq::cpu::avx512
