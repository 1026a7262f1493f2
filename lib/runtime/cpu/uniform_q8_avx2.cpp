// AVX2 half of uniform_gemv_q8, 4- and 8-bit codes (uniform_q8_isa.h has the layout).
// Compiled with -mavx2 -mfma -mf16c; keep the includes minimal (uniform_isa.h says why).
//
// Each 64-byte chunk is taken as two halves of 32 bytes (8 lanes). Per half and row of x:
//  - 4-bit codes (64 columns): vpmaddubsw of the low nibbles with the even columns' codes and
//    of the high nibbles with the odd ones (pair sums of at most 2 * 15 * 127, so their 16-bit
//    sum cannot saturate);
//  - 8-bit codes (32 columns): vpmaddubsw of unsigned codes would saturate (2 * 255 * 127), so
//    the codes are taken signed, code - 128 (a flip of the top bit), and multiplied as |code|
//    times x with code's sign (pair sums of at most 2 * 128 * 127 = 32512); the zero points'
//    part then uses zero - 128.
// Then vpmaddwd against ones into 8 int32 lane sums, and as the AVX-512 kernel.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "runtime/cpu/prefetch.h"
#include "runtime/cpu/simd_avx2.h"
#include "runtime/cpu/uniform_q8_isa.h"

namespace fsq::cpu {
namespace {

constexpr int kLanes = 8;
constexpr int64_t kHalfBytes = kQ8ChunkBytes / 2;
constexpr int64_t kPrefetchBytes = 8192;  // as uniform_q8_avx512vnni.cpp, one line per chunk read

template <int Bits, int M>
void q8_rows(const Q8Batch& b, int64_t row0, int64_t row1) {
  static_assert(Bits == 4 || Bits == 8);
  constexpr int64_t kChunkCols = q8_chunk_cols(Bits), kHalfCols = kChunkCols / 2, kLaneCols = kChunkCols / kQ8ChunkLanes;
  // Activation bytes per chunk in the panel: 4-bit codes have the even columns', then the odd ones'.
  constexpr int64_t kPanelChunkBytes = (Bits == 4 ? 2 : 1) * kQ8ChunkBytes;
  const UniformWeightsView& w = *b.w;
  const int64_t group_cols = w.group_cols, groups = w.cols / group_cols;
  const int64_t full_chunks = w.cols / kChunkCols;
  const int64_t tail_bytes = (w.cols % kChunkCols) * Bits / 8;
  const bool lane_groups = groups > 1 && group_cols < kChunkCols;  // then group_cols <= kHalfCols
  const __m256i lane_group = lane_groups ? _mm256_setr_epi32(0, 1 * kLaneCols / group_cols, 2 * kLaneCols / group_cols,
                                                             3 * kLaneCols / group_cols, 4 * kLaneCols / group_cols,
                                                             5 * kLaneCols / group_cols, 6 * kLaneCols / group_cols,
                                                             7 * kLaneCols / group_cols)
                                         : _mm256_setzero_si256();
  const __m256i low_nibbles = _mm256_set1_epi8(0x0F), top_bits = _mm256_set1_epi8(static_cast<char>(0x80));
  const __m256i ones = _mm256_set1_epi16(1);
  // What the kernel's codes are taken relative to: 8-bit codes are multiplied as code - 128.
  constexpr float kCodeOffset = Bits == 8 ? 128.0f : 0.0f;
  constexpr float kImplicitZero = static_cast<float>(1 << (Bits - 1)) - kCodeOffset;
  alignas(32) float scale[kQ8MaxRowGroups + 2 * kLanes];
  // A chunk's load of scales may read up to 7 entries past the last group; they multiply
  // zeros, but must be finite.
  _mm256_storeu_ps(scale + groups, _mm256_setzero_ps());
  const int64_t row_bytes = w.words_per_row * 4;
  const int64_t ahead_rows = (kPrefetchBytes + row_bytes - 1) / row_bytes, ahead_bytes = ahead_rows * row_bytes;
  // Half h of chunk c starts in group g, counted rather than divided (a division per half
  // sat on the scale loads' path): g advances by groups_per_half after every halves_per_group
  // halves (group_cols is 32, 64 or a multiple of 128; one group never advances).
  const int64_t groups_per_half = group_cols < kHalfCols ? kHalfCols / group_cols : 1;
  const int64_t halves_per_group = groups == 1 ? 2 * full_chunks + 2 : group_cols <= kHalfCols ? 1 : group_cols / kHalfCols;

  for (int64_t n = row0; n < row1; ++n) {
    const auto* row = reinterpret_cast<const uint8_t*>(w.words + n * w.words_per_row);
    const uint16_t* scales = w.scales + n * groups;
    const uint8_t* zeros = w.zeros ? w.zeros + n * groups : nullptr;
    const bool prefetch = n + ahead_rows < w.rows;
    if (prefetch) {
      prefetch_lines(scales + ahead_rows * groups, 0, groups * 2);
      if (zeros) prefetch_lines(zeros + ahead_rows * groups, 0, groups);
    }
    // Scales as floats, and the zero points' part: sum_g scale * zero * group_sums[g].
    __m256 zero_part[M];
    for (int i = 0; i < M; ++i) zero_part[i] = _mm256_setzero_ps();
    int64_t g = 0;
    for (; g + kLanes <= groups; g += kLanes) {
      const __m256 s = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + g)));
      const __m256 z = zeros ? _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(
                                                 reinterpret_cast<const __m128i*>(zeros + g)))),
                                             _mm256_set1_ps(kCodeOffset))
                             : _mm256_set1_ps(kImplicitZero);
      _mm256_store_ps(scale + g, s);
      const __m256 sz = _mm256_mul_ps(s, z);
      for (int i = 0; i < M; ++i)
        zero_part[i] = _mm256_fmadd_ps(sz, _mm256_loadu_ps(b.q8.group_sums + i * b.q8.group_sums_stride + g), zero_part[i]);
    }
    float zero_tail[M] = {};
    for (; g < groups; ++g) {
      scale[g] = _cvtsh_ss(scales[g]);
      const float sz = scale[g] * (zeros ? static_cast<float>(zeros[g]) - kCodeOffset : kImplicitZero);
      for (int i = 0; i < M; ++i) zero_tail[i] += sz * b.q8.group_sums[i * b.q8.group_sums_stride + g];
    }
    __m256 acc[M][2];
    for (int i = 0; i < M; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    const auto half = [&](int64_t c, int h, int64_t group, const uint8_t* bytes_at) __attribute__((always_inline)) {
      const __m256 s = lane_groups ? _mm256_permutevar8x32_ps(_mm256_loadu_ps(scale + group), lane_group)
                                   : _mm256_set1_ps(scale[group]);
      const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bytes_at));
      // 4-bit: the even and odd columns' codes; 8-bit: |code - 128| and code - 128.
      __m256i first, second;
      if constexpr (Bits == 4) {
        first = _mm256_and_si256(bytes, low_nibbles);
        second = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low_nibbles);
      } else {
        second = _mm256_xor_si256(bytes, top_bits);
        first = _mm256_abs_epi8(second);  // -128 gives 0x80, which vpmaddubsw reads as 128
      }
      for (int i = 0; i < M; ++i) {
        const int8_t* x = b.q8.codes + i * b.q8.codes_stride + c * kPanelChunkBytes + h * kHalfBytes;
        const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x));
        __m256i pairs;
        if constexpr (Bits == 4)
          pairs = _mm256_add_epi16(
              _mm256_maddubs_epi16(first, x0),
              _mm256_maddubs_epi16(second, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + kQ8ChunkBytes))));
        else
          pairs = _mm256_maddubs_epi16(first, _mm256_sign_epi8(x0, second));
        const __m256i dot = _mm256_madd_epi16(pairs, ones);
        const __m256 lane_scale =
            _mm256_mul_ps(s, _mm256_loadu_ps(b.q8.lane_scales + i * b.q8.lane_scales_stride + c * kQ8ChunkLanes + h * kLanes));
        acc[i][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), lane_scale, acc[i][h]);
      }
    };
    int64_t c = 0, group = 0, left = halves_per_group;
    const auto next_half = [&] {
      if (--left == 0) {
        group += groups_per_half;
        left = halves_per_group;
      }
    };
    for (; c < full_chunks; ++c) {
      if (prefetch) prefetch_to_l2(row + c * kQ8ChunkBytes + ahead_bytes);
      half(c, 0, group, row + c * kQ8ChunkBytes);
      next_half();
      half(c, 1, group, row + c * kQ8ChunkBytes + kHalfBytes);
      next_half();
    }
    if (tail_bytes != 0) {
      alignas(32) uint8_t tail[kQ8ChunkBytes] = {};
      std::memcpy(tail, row + c * kQ8ChunkBytes, static_cast<size_t>(tail_bytes));
      half(c, 0, group, tail);
      next_half();
      if (tail_bytes > kHalfBytes) half(c, 1, group, tail + kHalfBytes);
    }
    for (int i = 0; i < M; ++i)
      b.y[i * b.y_stride + n] = avx2::VecOps::reduce_add(_mm256_add_ps(acc[i][0], acc[i][1])) -
                                (avx2::VecOps::reduce_add(zero_part[i]) + zero_tail[i]);
  }
}

}  // namespace

void q8_rows_avx2(const Q8Batch& b, int64_t row0, int64_t row1) {
  static_assert(kMaxGemvRows == 8, "one instantiation per batch size below");
  constexpr Q8RowsFn by_rows4[] = {q8_rows<4, 1>, q8_rows<4, 2>, q8_rows<4, 3>, q8_rows<4, 4>,
                                   q8_rows<4, 5>, q8_rows<4, 6>, q8_rows<4, 7>, q8_rows<4, 8>};
  constexpr Q8RowsFn by_rows8[] = {q8_rows<8, 1>, q8_rows<8, 2>, q8_rows<8, 3>, q8_rows<8, 4>,
                                   q8_rows<8, 5>, q8_rows<8, 6>, q8_rows<8, 7>, q8_rows<8, 8>};
  (b.w->bits == 4 ? by_rows4 : by_rows8)[b.m - 1](b, row0, row1);
}

}  // namespace fsq::cpu
