// 3-bit codes (packed as packed_code.h) spread to bytes with AVX2, for the uniform q8 GEMV
// (uniform_q8_avx2.cpp). Internal linkage and intrinsics: include only from files compiled
// with -mavx2 (uniform_isa.h says why). 3-bit LUTs stay on the f32 kernel on AVX2: with this
// spread and a vpshufb lookup, their int8 GEMV measured 1.3x the f32 one at LLaMA-7B's
// down_proj at batch 1 (33 % against 25 % of the read bandwidth) and slower at batch 8, not
// worth int8's rounding of x and the centroids.
//
// 32 columns in order are 12 code bytes. Both 128-bit lanes get the 16 bytes from there;
// vpshufb puts in each 16-bit word the two bytes holding one code, vpmullw by 2^(13 - s)
// moves the code's bits s .. s + 2 of that word to bits 13 .. 15 and a shift right by 13
// brings them down. Words of codes 0-7 and 16-23 in one vector (one 128-bit lane each),
// 8-15 and 24-31 in the other, so that vpackuswb gives the 32 codes in order.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace fsq::cpu {
namespace {

constexpr int64_t kCodes3HalfCols = 32, kCodes3HalfBytes = 12;
// What spread_codes3_half loads from p: the 12 code bytes and 4 more (unused).
constexpr int64_t kCodes3HalfLoadBytes = 16;

// Byte k of the result holds code k of the 32 codes at p (0 .. 7). Reads 16 bytes from p.
__attribute__((always_inline)) inline __m256i spread_codes3_half(const uint8_t* p) {
  // Code j of a run of 8 starting on a byte boundary sits at bit 3 j: bytes 3 j / 8 and the
  // next, shifted by 3 j % 8 = 0, 3, 6, 1, 4, 7, 2, 5. Runs start at bytes 0, 6 (codes 0, 16:
  // first vector) and 3, 9 (codes 8, 24: second vector).
  const __m256i first_bytes = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 1, 2, 1, 2, 1, 2, 2, 3, 2, 3,  //
                                               6, 7, 6, 7, 6, 7, 7, 8, 7, 8, 7, 8, 8, 9, 8, 9);
  const __m256i second_bytes = _mm256_add_epi8(first_bytes, _mm256_set1_epi8(3));
  const __m256i to_top = _mm256_setr_epi16(1 << 13, 1 << 10, 1 << 7, 1 << 12, 1 << 9, 1 << 6, 1 << 11, 1 << 8,  //
                                           1 << 13, 1 << 10, 1 << 7, 1 << 12, 1 << 9, 1 << 6, 1 << 11, 1 << 8);
  const __m256i bytes = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  const __m256i first = _mm256_srli_epi16(_mm256_mullo_epi16(_mm256_shuffle_epi8(bytes, first_bytes), to_top), 13);
  const __m256i second = _mm256_srli_epi16(_mm256_mullo_epi16(_mm256_shuffle_epi8(bytes, second_bytes), to_top), 13);
  return _mm256_packus_epi16(first, second);
}

}  // namespace
}  // namespace fsq::cpu
