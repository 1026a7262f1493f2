// The AVX-512 (F, BW, VL) vector ops of the LUT kernels (the `Simd` of lut_simd_loops.h),
// shared by lut_kernels_avx512.cpp and lut_kernels_avx512vbmi.cpp. Internal linkage only,
// as lut_simd_loops.h; include only from those two files (each compiles it with its flags).
//
// A row's table lives in one zmm (16 centroids; the 8 of a 3-bit row twice over) and codes
// become weights with one vpermps, which reads only the low 4 bits of each index: codes
// need no masking. 4-bit blocks: one 64-byte load holds 128 codes, lane j's word the codes
// 8j .. 8j + 7; vector s is that load shifted right by 4s (the panel matches, lut_isa.h).
// 3-bit: 32 codes (12 bytes) broadcast to the four 128-bit lanes, vpshufb moves the two
// bytes holding each code into its lane, vpsrlvd aligns it.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "runtime/cpu/byte_loads.h"
#include "runtime/cpu/lut_isa.h"
#include "runtime/cpu/simd_avx512.h"
#include "runtime/cpu/sparse_dot_chains.h"

namespace fsq::cpu {
namespace {

// The vpshufb control that gives dword lane j (code j of 16, bits 3j .. 3j + 2 of a 48-bit
// chunk starting at byte O) bytes O + 3j/8 and O + 3j/8 + 1, zeros above.
constexpr int32_t two_bytes(int b) {
  return static_cast<int32_t>(static_cast<uint32_t>(b) | static_cast<uint32_t>(b + 1) << 8 | 0x80800000u);
}
template <int O>
__m512i code_bytes_3bit() {
  return _mm512_setr_epi32(two_bytes(O + 0), two_bytes(O + 0), two_bytes(O + 0), two_bytes(O + 1), two_bytes(O + 1),
                           two_bytes(O + 1), two_bytes(O + 2), two_bytes(O + 2), two_bytes(O + 3), two_bytes(O + 3),
                           two_bytes(O + 3), two_bytes(O + 4), two_bytes(O + 4), two_bytes(O + 4), two_bytes(O + 5),
                           two_bytes(O + 5));
}

struct Avx512 : avx512::VecOps {
  using Table = __m512;
  static constexpr int64_t kBlockOverread = 4;  // block<3> loads 16 bytes for 12 (VBMI: 8 for 6)

  // Rows with fewer nonzeros than this are summed in scalar code: a vector gather and a
  // reduction per row cost more on them (0.45 % of 4096 columns is ~18 per row, of 11008
  // ~50). Longer rows: 16 nonzeros at a time, columns widened, x gathered, values converted;
  // a masked tail.
  static constexpr int64_t kScalarNonzeros = 64;
  static __m512i columns(const uint16_t* c) {
    return _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(c)));
  }
  static __m512i columns(const int32_t* c) { return _mm512_loadu_si512(c); }
  static __m512i columns(const uint16_t* c, __mmask16 k) { return _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k, c)); }
  static __m512i columns(const int32_t* c, __mmask16 k) { return _mm512_maskz_loadu_epi32(k, c); }
  template <typename Col>
  static float sparse_dot(const float* x, const Col* col, const uint16_t* val, int64_t count) {
    if (count < kScalarNonzeros) return sparse_dot_four_chains(x, col, val, count, [](uint16_t h) { return half(h); });
    Vec acc = _mm512_setzero_ps();
    int64_t e = 0;
    for (; e + kLanes <= count; e += kLanes) {
      const Vec v = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(val + e)));
      acc = _mm512_fmadd_ps(_mm512_i32gather_ps(columns(col + e), x, 4), v, acc);
    }
    if (e < count) {
      const __mmask16 k = first_lanes(static_cast<int>(count - e));
      const Vec v = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, val + e));
      const Vec g = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), k, columns(col + e, k), x, 4);
      acc = _mm512_fmadd_ps(g, v, acc);
    }
    return _mm512_reduce_add_ps(acc);
  }

  template <int B>
  static Table table(const uint16_t* lut) {
    if constexpr (B == 4) {
      return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(lut)));
    } else {
      const __m512 eight = _mm512_castps256_ps512(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(lut))));
      return _mm512_shuffle_f32x4(eight, eight, _MM_SHUFFLE(1, 0, 1, 0));
    }
  }

  template <int B>
  static void block(const uint8_t* p, const Table& t, Vec* w) {
    if constexpr (B == 4) {
      const __m512i v = _mm512_loadu_si512(p);
      w[0] = _mm512_permutexvar_ps(v, t);
      w[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 4), t);
      w[2] = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 8), t);
      w[3] = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 12), t);
      w[4] = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 16), t);
      w[5] = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 20), t);
      w[6] = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 24), t);
      w[7] = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 28), t);
    } else {
      const __m512i low = code_bytes_3bit<0>(), high = code_bytes_3bit<6>();
      const __m512i shifts = _mm512_setr_epi32(0, 3, 6, 1, 4, 7, 2, 5, 0, 3, 6, 1, 4, 7, 2, 5);
      for (int s = 0; s < 4; ++s) {  // 32 codes, 12 bytes, each (16 bytes read)
        const __m512i bytes = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 12 * s)));
        w[2 * s] = _mm512_permutexvar_ps(_mm512_srlv_epi32(_mm512_shuffle_epi8(bytes, low), shifts), t);
        w[2 * s + 1] = _mm512_permutexvar_ps(_mm512_srlv_epi32(_mm512_shuffle_epi8(bytes, high), shifts), t);
      }
    }
  }

  // A 4-bit half block (lut_isa.h): 64 codes, 32 bytes; word j in lanes j and j + 8, lanes
  // j + 8 shifted 4 bits further.
  static constexpr bool kHalfBlock4 = true;
  static void half_block4(const uint8_t* p, const Table& t, Vec* w) {
    const __m512i words = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    const __m512i v = _mm512_srlv_epi32(words, _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4));
    w[0] = _mm512_permutexvar_ps(v, t);
    w[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 8), t);
    w[2] = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 16), t);
    w[3] = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 24), t);
  }

  template <int B>
  static Vec weights(const uint8_t* p, int n, int64_t avail, const Table& t) {
    const int64_t need = (int64_t{n} * B + 7) / 8;
    const uint64_t bits = n == kLanes && avail >= 8 ? load_bytes(p, 8) : load_bytes(p, need);
    __m512i index;
    if constexpr (B == 4) {
      const __m128i b = _mm_cvtsi64_si128(static_cast<long long>(bits));
      const __m512i shifts = _mm512_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4);
      index = _mm512_srlv_epi32(_mm512_cvtepu8_epi32(_mm_unpacklo_epi8(b, b)), shifts);
    } else {
      // 8 codes per 24 bits: put bits 24..47 into the second dword, then one word per lane.
      const uint64_t split = (bits & 0xFFFFFF) | ((bits >> 24) & 0xFFFFFF) << 32;
      const __m512i low_then_high = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
      const __m512i words =
          _mm512_permutexvar_epi32(low_then_high, _mm512_zextsi128_si512(_mm_cvtsi64_si128(static_cast<long long>(split))));
      index = _mm512_srlv_epi32(words, _mm512_setr_epi32(0, 3, 6, 9, 12, 15, 18, 21, 0, 3, 6, 9, 12, 15, 18, 21));
    }
    return _mm512_permutexvar_ps(index, t);
  }
};

}  // namespace
}  // namespace fsq::cpu
