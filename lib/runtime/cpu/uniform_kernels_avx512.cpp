// AVX-512 (F, BW, VL) variant of the uniform kernels: 16 lanes. Compiled with -mavx512f
// -mavx512bw -mavx512vl -mfma -mf16c (lib/runtime/CMakeLists.txt); called only when
// cpu_supports(CpuIsa::Avx512). Keep the includes minimal (uniform_isa.h says why).
//
// 2/3/4-bit codes become weights through a per-group 16-entry table and one vpermps (which
// reads only the low 4 bits of each index, so codes need no masking); 8-bit codes are
// widened and converted, then scaled.
#include <immintrin.h>

#include <cstdint>

#include "runtime/cpu/byte_loads.h"
#include "runtime/cpu/simd_avx512.h"
#include "runtime/cpu/uniform_isa.h"
#include "runtime/cpu/uniform_simd_loops.h"

namespace fsq::cpu {
namespace {

// Bit offset of lane j's code within the 32-bit word broadcast to lane j (see indices).
template <int B>
__m512i code_shifts() {
  if constexpr (B == 2) return _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  if constexpr (B == 3) return _mm512_setr_epi32(0, 3, 6, 9, 12, 15, 18, 21, 0, 3, 6, 9, 12, 15, 18, 21);
  return _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28);
}

// Lanes 0 .. n-1 hold codes c0 .. c0 + n - 1 (B < 8) in their low B bits, garbage above.
// The chunk's 16 * B bits are fetched, the 32-bit word holding lane j's code is put in
// lane j (2-bit: all 16 codes fit one word; 3-bit is first repacked to 8 codes per word,
// like 4-bit) and shifted down per lane.
template <int B>
__m512i code_indices(const uint8_t* row, int64_t c0, int n) {
  const uint8_t* p = row + ((c0 * B) >> 3);
  uint64_t bits = n == 16 ? load_fixed<2 * B>(p) : load_bytes(p, (n * B + 7) / 8);
  __m512i words;
  if constexpr (B == 2) {
    words = _mm512_set1_epi32(static_cast<int>(bits));
  } else {
    if constexpr (B == 3) bits = (bits & 0xFFFFFF) | ((bits >> 24) & 0xFFFFFF) << 32;
    const __m512i low_then_high = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    words = _mm512_permutexvar_epi32(low_then_high, _mm512_zextsi128_si512(_mm_cvtsi64_si128(static_cast<long long>(bits))));
  }
  return _mm512_srlv_epi32(words, code_shifts<B>());
}

// vpshufb control: dword j (of 16) takes bytes first + 3j/8 and the one after it, which hold
// code j of the 16 starting at byte `first` (first 0: codes 0..15, first 6: codes 16..31).
template <int first>
__m512i code3_bytes() {
  alignas(64) static constexpr uint8_t kControl[64] = {
#define FSQ_CODE3_DWORD(j) first + 3 * (j) / 8, first + 3 * (j) / 8 + 1, 0x80, 0x80
      FSQ_CODE3_DWORD(0),  FSQ_CODE3_DWORD(1),  FSQ_CODE3_DWORD(2),  FSQ_CODE3_DWORD(3),
      FSQ_CODE3_DWORD(4),  FSQ_CODE3_DWORD(5),  FSQ_CODE3_DWORD(6),  FSQ_CODE3_DWORD(7),
      FSQ_CODE3_DWORD(8),  FSQ_CODE3_DWORD(9),  FSQ_CODE3_DWORD(10), FSQ_CODE3_DWORD(11),
      FSQ_CODE3_DWORD(12), FSQ_CODE3_DWORD(13), FSQ_CODE3_DWORD(14), FSQ_CODE3_DWORD(15)};
#undef FSQ_CODE3_DWORD
  return _mm512_load_si512(kControl);
}

// Code j's bit offset within its two bytes: 3j mod 8.
inline __m512i code3_shifts() { return _mm512_setr_epi32(0, 3, 6, 1, 4, 7, 2, 5, 0, 3, 6, 1, 4, 7, 2, 5); }

struct Avx512 : avx512::VecOps {

  static void group_params(const uint16_t* scales, const uint8_t* zeros, float implicit_zero, int count,
                           float* scale, float* zero, float* offset) {
    const __mmask16 valid = first_lanes(count);
    const Vec s = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(valid, scales));
    const Vec z = zeros ? _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(valid, zeros)))
                        : _mm512_set1_ps(implicit_zero);
    _mm512_store_ps(scale, s);
    _mm512_store_ps(zero, z);
    _mm512_store_ps(offset, _mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(s, z)));
  }

  struct Group {
    Vec scale, zero, offset;  // 8-bit: w = q * scale + offset, or exactly (q - zero) * scale
    Vec table;                // 2/3/4-bit: table[i] = ((i mod 2^B) - zero) * scale, exact
  };
  template <int B>
  static Group group(const float& scale, const float& zero, const float& offset) {
    Group g;
    g.scale = _mm512_set1_ps(scale);
    g.zero = _mm512_set1_ps(zero);
    g.offset = _mm512_set1_ps(offset);
    if constexpr (B < 8) {
      const __m512i index = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
      const Vec codes = _mm512_cvtepi32_ps(_mm512_and_si512(index, _mm512_set1_epi32((1 << B) - 1)));
      g.table = _mm512_mul_ps(_mm512_sub_ps(codes, g.zero), g.scale);
    }
    return g;
  }

  template <int B, bool kExact>
  static Vec weights(const uint8_t* row, int64_t c0, int n, const Group& g) {
    if constexpr (B == 8) {
      const uint8_t* p = row + c0;
      const __m128i bytes = n == kLanes ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(p))
                                        : _mm_maskz_loadu_epi8(first_lanes(n), p);
      const Vec q = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes));
      return kExact ? _mm512_mul_ps(_mm512_sub_ps(q, g.zero), g.scale) : fmadd(q, g.scale, g.offset);
    } else {
      return _mm512_permutexvar_ps(code_indices<B>(row, c0, n), g.table);
    }
  }

  template <int B>
  static constexpr int kStepVectors = B == 3 ? 2 : cpu::kStepVectors<B>;

  // 4-bit: 16 bytes widened to 32-bit lanes index the table directly (low nibbles, the
  // even columns), then shifted by 4 (high nibbles, the odd columns). 3-bit: 32 codes in
  // column order from 12 bytes (c0 a multiple of 32: byte aligned), read as 8 + 4 so
  // nothing past them is touched; in every 128-bit lane one vpshufb puts the two bytes
  // holding code j into dword j, and one shift per lane brings the code down (the table
  // ignores bit 3 and up).
  template <int B>
  static void step_weights(const uint8_t* row, int64_t c0, const Group& g, Vec* w) {
    if constexpr (B == 3) {
      static_assert(kLanes == kAvx512Lanes);
      const uint8_t* p = row + (c0 * 3 >> 3);
      const __m128i twelve = _mm_insert_epi32(_mm_cvtsi64_si128(static_cast<long long>(load_fixed<8>(p))),
                                              static_cast<int>(load_fixed<4>(p + 8)), 2);
      const __m512i bytes = _mm512_broadcast_i32x4(twelve);
      w[0] = _mm512_permutexvar_ps(_mm512_srlv_epi32(_mm512_shuffle_epi8(bytes, code3_bytes<0>()), code3_shifts()), g.table);
      w[1] = _mm512_permutexvar_ps(_mm512_srlv_epi32(_mm512_shuffle_epi8(bytes, code3_bytes<6>()), code3_shifts()), g.table);
    } else if constexpr (B == 4) {
      static_assert(kLanes == kAvx512Lanes);
      const __m512i bytes = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + (c0 >> 1))));
      w[0] = _mm512_permutexvar_ps(bytes, g.table);
      w[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(bytes, 4), g.table);
    } else {
      w[0] = weights<B, false>(row, c0, kLanes, g);
    }
  }
};

}  // namespace

void gemv_rows_avx512(const GemvBatch& b, int64_t row0, int64_t row1) { gemv_rows_simd<Avx512>(b, row0, row1); }

void dequantize_rows_avx512(const UniformWeightsView& w, int64_t row0, int64_t nrows, float* out) {
  dequantize_rows_simd<Avx512>(w, row0, nrows, out);
}

}  // namespace fsq::cpu
