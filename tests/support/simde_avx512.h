// Test-only: the AVX-512 intrinsics of fsq's kernels on CPUs without AVX-512, through SIMDe
// (Debian's libsimde-dev), force-included before a kernel file (tests/runtime/CMakeLists.txt);
// the few that SIMDe 0.7.4 lacks are written here as plain loops over the lanes.
#pragma once
#include <immintrin.h>
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>

#include <cstdint>
#include <cstring>

namespace fsq_emu {
template <typename T, int N, typename V>
inline V masked_load(uint64_t k, const void* p) {
  T b[N];
  for (int i = 0; i < N; ++i) b[i] = (k >> i) & 1 ? static_cast<const T*>(p)[i] : T{};
  V v;
  std::memcpy(&v, b, sizeof v);
  return v;
}
template <typename T, int N, typename V>
inline void masked_store(void* p, uint64_t k, V v) {
  T b[N];
  std::memcpy(b, &v, sizeof v);
  for (int i = 0; i < N; ++i)
    if ((k >> i) & 1) static_cast<T*>(p)[i] = b[i];
}
template <typename V, typename T, int N>
inline void lanes(V v, T (&out)[N]) {
  static_assert(sizeof(V) == sizeof(out));
  std::memcpy(out, &v, sizeof v);
}
template <typename V, typename T, int N>
inline V from_lanes(const T (&in)[N]) {
  V v;
  static_assert(sizeof(V) == sizeof(in));
  std::memcpy(&v, in, sizeof v);
  return v;
}
inline simde__m512 cvtepi32_ps(simde__m512i a) {
  int32_t i[16];
  float f[16];
  lanes(a, i);
  for (int j = 0; j < 16; ++j) f[j] = static_cast<float>(i[j]);
  return from_lanes<simde__m512>(f);
}
inline float reduce_add_ps(simde__m512 a) {
  // As GCC's _mm512_reduce_add_ps: halves added pairwise down to one lane.
  float f[16];
  lanes(a, f);
  for (int w = 8; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) f[j] = f[j] + f[j + w];
  return f[0];
}
// 16 unsigned lanes of `From` zero-extended to int32 (vpmovzxbd, vpmovzxwd).
template <typename From, typename V>
inline simde__m512i zero_extend_epi32(V a) {
  From h[16];
  int32_t w[16];
  lanes(a, h);
  for (int j = 0; j < 16; ++j) w[j] = h[j];
  return from_lanes<simde__m512i>(w);
}
inline simde__m512 cvtph_ps(simde__m256i a) {
  uint16_t h[16];
  float f[16];
  lanes(a, h);
  for (int j = 0; j < 16; ++j) f[j] = _cvtsh_ss(h[j]);
  return from_lanes<simde__m512>(f);
}
inline simde__m512 mask_i32gather_ps(simde__m512 src, uint16_t k, simde__m512i index, const void* base, int scale) {
  float f[16];
  int32_t i[16];
  lanes(src, f);
  lanes(index, i);
  for (int j = 0; j < 16; ++j)
    if ((k >> j) & 1) std::memcpy(&f[j], static_cast<const char*>(base) + int64_t{i[j]} * scale, 4);
  return from_lanes<simde__m512>(f);
}
inline simde__m512i zextsi128_si512(simde__m128i a) {
  uint8_t b[64] = {};
  std::memcpy(b, &a, 16);
  return from_lanes<simde__m512i>(b);
}
}  // namespace fsq_emu

#define _cvtu64_mask64(x) (static_cast<simde__mmask64>(x))
#define _mm512_maskz_loadu_epi8(k, p) (fsq_emu::masked_load<int8_t, 64, simde__m512i>((k), (p)))
#define _mm512_maskz_loadu_epi32(k, p) (fsq_emu::masked_load<int32_t, 16, simde__m512i>((k), (p)))
#define _mm256_maskz_loadu_epi16(k, p) (fsq_emu::masked_load<int16_t, 16, simde__m256i>((k), (p)))
#define _mm512_mask_storeu_epi8(p, k, v) (fsq_emu::masked_store<int8_t, 64>((p), (k), (v)))
#define _mm512_mask_storeu_ps(p, k, v) (fsq_emu::masked_store<float, 16>((p), (k), (v)))
#define _mm512_cvtepi32_ps(a) (fsq_emu::cvtepi32_ps(a))
#define _mm512_reduce_add_ps(a) (fsq_emu::reduce_add_ps(a))
#define _mm512_cvtepu16_epi32(a) (fsq_emu::zero_extend_epi32<uint16_t>(a))
#define _mm512_cvtepu8_epi32(a) (fsq_emu::zero_extend_epi32<uint8_t>(a))
#define _mm512_cvtph_ps(a) (fsq_emu::cvtph_ps(a))
#define _mm512_i32gather_ps(i, b, s) (fsq_emu::mask_i32gather_ps(simde_mm512_setzero_ps(), 0xFFFF, (i), (b), (s)))
#define _mm512_mask_i32gather_ps(src, k, i, b, s) (fsq_emu::mask_i32gather_ps((src), (k), (i), (b), (s)))
#define _mm512_zextsi128_si512(a) (fsq_emu::zextsi128_si512(a))
