// AVX2 half of uniform_gemv_q8, 3-, 4- and 8-bit codes (uniform_q8_isa.h has the layout).
// Compiled with -mavx2 -mfma -mf16c; keep the includes minimal (uniform_isa.h says why).
//
// Each chunk is taken as two halves (8 lanes). Per half and row of x:
//  - 4-bit codes (64 columns): vpmaddubsw of the low nibbles with the even columns' codes and
//    of the high nibbles with the odd ones (pair sums of at most 2 * 15 * 127, so their 16-bit
//    sum cannot saturate);
//  - 8-bit codes (32 columns): vpmaddubsw of unsigned codes would saturate (2 * 255 * 127), so
//    the codes are taken signed, code - 128 (a flip of the top bit), and multiplied as |code|
//    times x with code's sign (pair sums of at most 2 * 128 * 127 = 32512); the zero points'
//    part then uses zero - 128;
//  - 3-bit codes (32 columns, 12 bytes): spread to bytes (codes3_avx2.h), then vpmaddubsw as
//    the 4-bit ones (pair sums of at most 2 * 7 * 127).
// Then vpmaddwd against ones into 8 int32 lane sums, and as the AVX-512 kernel.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "runtime/cpu/codes3_avx2.h"
#include "runtime/cpu/prefetch.h"
#include "runtime/cpu/simd_avx2.h"
#include "runtime/cpu/uniform_q8_isa.h"

namespace fsq::cpu {
namespace {

constexpr int kLanes = 8;
constexpr int64_t kHalfXBytes = kQ8ChunkBytes / 2;  // activation codes per half (and row of x)

// Code bytes per chunk and half, and what a half's load reads from its start.
template <int Bits>
struct ChunkBytes {
  static constexpr int64_t kChunk = q8_chunk_cols(Bits) * Bits / 8, kHalf = kChunk / 2;
  static constexpr int64_t kHalfLoad = Bits == 3 ? kCodes3HalfLoadBytes : kHalf;
};

// What every row of one call shares.
struct RowsContext {
  const Q8Batch* b = nullptr;
  const uint8_t* end = nullptr;  // one past the matrix's last code byte
  int64_t groups = 0, full_chunks = 0, tail_bytes = 0;
  int64_t row_bytes = 0, ahead_rows = 0, ahead_bytes = 0;
  // Half h of chunk c starts in group g, counted rather than divided (a division per half
  // sat on the scale loads' path): g advances by groups_per_half after every halves_per_group
  // halves (group_cols is 32, 64 or a multiple of 128; one group never advances).
  int64_t groups_per_half = 1, halves_per_group = 1;
  bool lane_groups = false;  // lanes of one half in different groups (else one broadcast scale)
  __m256i lane_group;        // lane_groups: lane j's group, counted from the half's first
};

// Output rows n .. n + R - 1 for all M rows of x; R rows share the loads of x and of the
// lane scales. Scales go to a float buffer per row first (fp16 conversions once per group,
// not per half), and the zero points' part, sum_g scale * zero * group_sums[g], starts the
// accumulators (negated).
template <int Bits, int M, int R>
__attribute__((always_inline)) inline void row_block(const RowsContext& ctx, int64_t n, float (*scale)[kQ8MaxRowGroups + kLanes]) {
  static_assert(Bits == 3 || Bits == 4 || Bits == 8);
  using Bytes = ChunkBytes<Bits>;
  // Activation bytes per chunk in the panel: 4-bit codes have the even columns', then the odd ones'.
  constexpr int64_t kPanelChunkBytes = (Bits == 4 ? 2 : 1) * kQ8ChunkBytes;
  // Accumulators per output: two for one row of x, so that the FMA chains overlap. A
  // function of M alone: an output's sums are the same whichever rows it runs beside.
  constexpr int kSplit = M == 1 ? 2 : 1;
  // What the kernel's codes are taken relative to: 8-bit codes are multiplied as code - 128.
  constexpr float kCodeOffset = Bits == 8 ? 128.0f : 0.0f;
  constexpr float kImplicitZero = static_cast<float>(1 << (Bits - 1)) - kCodeOffset;
  const Q8Batch& b = *ctx.b;
  const UniformWeightsView& w = *b.w;
  const int64_t groups = ctx.groups;
  const auto* rows = reinterpret_cast<const uint8_t*>(w.words + n * w.words_per_row);
  const bool prefetch = n + R - 1 + ctx.ahead_rows < w.rows;
  __m256 acc[R][M][kSplit];
  float zero_tail[R][M];
  for (int r = 0; r < R; ++r) {
    const uint16_t* scales = w.scales + (n + r) * groups;
    const uint8_t* zeros = w.zeros ? w.zeros + (n + r) * groups : nullptr;
    if (prefetch) {
      prefetch_lines(scales + ctx.ahead_rows * groups, 0, groups * 2);
      if (zeros) prefetch_lines(zeros + ctx.ahead_rows * groups, 0, groups);
    }
    for (int i = 0; i < M; ++i) {
      for (int k = 0; k < kSplit; ++k) acc[r][i][k] = _mm256_setzero_ps();
      zero_tail[r][i] = 0.0f;
    }
    int64_t g = 0;
    for (; g + kLanes <= groups; g += kLanes) {
      const __m256 s = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + g)));
      const __m256 z = zeros ? _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(
                                                 _mm_loadl_epi64(reinterpret_cast<const __m128i*>(zeros + g)))),
                                             _mm256_set1_ps(kCodeOffset))
                             : _mm256_set1_ps(kImplicitZero);
      _mm256_store_ps(scale[r] + g, s);
      const __m256 sz = _mm256_mul_ps(s, z);
      for (int i = 0; i < M; ++i)
        acc[r][i][0] = _mm256_fnmadd_ps(sz, _mm256_loadu_ps(b.q8.group_sums + i * b.q8.group_sums_stride + g), acc[r][i][0]);
    }
    for (; g < groups; ++g) {
      scale[r][g] = _cvtsh_ss(scales[g]);
      const float sz = scale[r][g] * (zeros ? static_cast<float>(zeros[g]) - kCodeOffset : kImplicitZero);
      for (int i = 0; i < M; ++i) zero_tail[r][i] += sz * b.q8.group_sums[i * b.q8.group_sums_stride + g];
    }
  }
  const __m256i low_nibbles = _mm256_set1_epi8(0x0F), top_bits = _mm256_set1_epi8(static_cast<char>(0x80));
  const __m256i ones = _mm256_set1_epi16(1);
  // Half h of chunk c (in group `group`), its code bytes of row r at code[r]. check_end: the
  // half's load may pass the matrix's end (its last row's tail, or a 3-bit row's last 4
  // bytes), where it reads a copy of what is left, padded with zeros.
  const auto half = [&](int64_t c, int h, int64_t group, const uint8_t* const* code, bool check_end)
                        __attribute__((always_inline)) {
    // 4-bit: the even and odd columns' codes; 8-bit: |code - 128| and code - 128; 3-bit: the codes.
    __m256i first[R], second[R];
    __m256 s[R];
    for (int r = 0; r < R; ++r) {
      s[r] = ctx.lane_groups ? _mm256_permutevar8x32_ps(_mm256_loadu_ps(scale[r] + group), ctx.lane_group)
                             : _mm256_broadcast_ss(scale[r] + group);
      const uint8_t* p = code[r];
      alignas(32) uint8_t copy[kHalfXBytes];
      if (check_end && p + Bytes::kHalfLoad > ctx.end) {
        std::memset(copy, 0, sizeof(copy));
        std::memcpy(copy, p, static_cast<size_t>(ctx.end - p));
        p = copy;
      }
      if constexpr (Bits == 3) {
        first[r] = spread_codes3_half(p);
        continue;
      }
      const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
      if constexpr (Bits == 4) {
        first[r] = _mm256_and_si256(bytes, low_nibbles);
        second[r] = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low_nibbles);
      } else {
        second[r] = _mm256_xor_si256(bytes, top_bits);
        first[r] = _mm256_abs_epi8(second[r]);  // -128 gives 0x80, which vpmaddubsw reads as 128
      }
    }
    for (int i = 0; i < M; ++i) {
      const int8_t* x = b.q8.codes + i * b.q8.codes_stride + c * kPanelChunkBytes + h * kHalfXBytes;
      const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x));
      const __m256i x1 = Bits == 4 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + kQ8ChunkBytes)) : x0;
      const __m256 lane_scales =
          _mm256_loadu_ps(b.q8.lane_scales + i * b.q8.lane_scales_stride + c * kQ8ChunkLanes + h * kLanes);
      for (int r = 0; r < R; ++r) {
        __m256i pairs;
        if constexpr (Bits == 4)
          pairs = _mm256_add_epi16(_mm256_maddubs_epi16(first[r], x0), _mm256_maddubs_epi16(second[r], x1));
        else if constexpr (Bits == 8)
          pairs = _mm256_maddubs_epi16(first[r], _mm256_sign_epi8(x0, second[r]));
        else
          pairs = _mm256_maddubs_epi16(first[r], x0);
        const __m256i dot = _mm256_madd_epi16(pairs, ones);
        __m256& a = acc[r][i][kSplit == 2 ? h : 0];
        a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(s[r], lane_scales), a);
      }
    }
  };
  int64_t c = 0, group = 0, left = ctx.halves_per_group;
  const auto next_half = [&] {
    if (--left == 0) {
      group += ctx.groups_per_half;
      left = ctx.halves_per_group;
    }
  };
  const uint8_t* code[R];
  for (; c < ctx.full_chunks; ++c) {
    for (int r = 0; r < R; ++r) {
      code[r] = rows + r * ctx.row_bytes + c * Bytes::kChunk;
      if (prefetch) prefetch_to_l2(code[r] + ctx.ahead_bytes);
    }
    half(c, 0, group, code, false);
    next_half();
    for (int r = 0; r < R; ++r) code[r] += Bytes::kHalf;
    half(c, 1, group, code, Bits == 3);
    next_half();
  }
  if (ctx.tail_bytes != 0) {
    // The tail's halves load as full ones: the bytes past the row (the next row's) meet
    // activation codes 0 in the panel. Only where such a load could pass the matrix's end
    // (its last row) are the bytes copied: with a copy on every row (a memcpy call and a
    // stalled load from what it stored) SmolLM2's 576 x 1536 at 4 bits ran at 5.1 GB/s from
    // DRAM, 7.9 without (1 thread, Zen 3).
    for (int r = 0; r < R; ++r) code[r] = rows + r * ctx.row_bytes + c * Bytes::kChunk;
    half(c, 0, group, code, true);
    next_half();
    if (ctx.tail_bytes > Bytes::kHalf) {
      for (int r = 0; r < R; ++r) code[r] += Bytes::kHalf;
      half(c, 1, group, code, true);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < M; ++i) {
      const __m256 sum = kSplit == 2 ? _mm256_add_ps(acc[r][i][0], acc[r][i][kSplit - 1]) : acc[r][i][0];
      b.y[i * b.y_stride + n + r] = avx2::VecOps::reduce_add(sum) - zero_tail[r][i];
    }
}

template <int Bits, int M>
void q8_rows(const Q8Batch& b, int64_t row0, int64_t row1) {
  constexpr int64_t kChunkCols = q8_chunk_cols(Bits), kHalfCols = kChunkCols / 2, kLaneCols = kChunkCols / kQ8ChunkLanes;
  // Rows per block: they share the loads of x, within 16 registers.
  constexpr int R = M <= 2 ? 2 : 1;
  const UniformWeightsView& w = *b.w;
  const int64_t group_cols = w.group_cols;
  RowsContext ctx;
  ctx.b = &b;
  ctx.end = reinterpret_cast<const uint8_t*>(w.words + w.rows * w.words_per_row);
  ctx.groups = w.cols / group_cols;
  ctx.full_chunks = w.cols / kChunkCols;
  ctx.tail_bytes = (w.cols % kChunkCols) * Bits / 8;
  ctx.lane_groups = ctx.groups > 1 && group_cols < kHalfCols;
  alignas(32) int32_t lane_group[kLanes] = {};
  if (ctx.lane_groups)
    for (int j = 0; j < kLanes; ++j) lane_group[j] = static_cast<int32_t>(j * kLaneCols / group_cols);
  ctx.lane_group = _mm256_load_si256(reinterpret_cast<const __m256i*>(lane_group));
  ctx.groups_per_half = group_cols < kHalfCols ? kHalfCols / group_cols : 1;
  ctx.halves_per_group =
      ctx.groups == 1 ? 2 * ctx.full_chunks + 2 : group_cols <= kHalfCols ? 1 : group_cols / kHalfCols;
  ctx.row_bytes = w.words_per_row * 4;
  ctx.ahead_rows = R + (kQ8PrefetchBytes + ctx.row_bytes - 1) / ctx.row_bytes;
  ctx.ahead_bytes = ctx.ahead_rows * ctx.row_bytes;
  // Each row's scales as floats. A lane_groups half's load of 8 may read up to 7 entries
  // past the row's last group: they multiply zero codes, but must be finite.
  alignas(32) float scale[R][kQ8MaxRowGroups + kLanes];
  for (int r = 0; r < R; ++r) _mm256_storeu_ps(scale[r] + ctx.groups, _mm256_setzero_ps());
  int64_t n = row0;
  for (; n + R <= row1; n += R) row_block<Bits, M, R>(ctx, n, scale);
  for (; n < row1; ++n) row_block<Bits, M, 1>(ctx, n, scale);
}

}  // namespace

void q8_rows_avx2(const Q8Batch& b, int64_t row0, int64_t row1) {
  static_assert(kMaxGemvRows == 8, "one instantiation per batch size below");
  constexpr Q8RowsFn by_rows4[] = {q8_rows<4, 1>, q8_rows<4, 2>, q8_rows<4, 3>, q8_rows<4, 4>,
                                   q8_rows<4, 5>, q8_rows<4, 6>, q8_rows<4, 7>, q8_rows<4, 8>};
  constexpr Q8RowsFn by_rows8[] = {q8_rows<8, 1>, q8_rows<8, 2>, q8_rows<8, 3>, q8_rows<8, 4>,
                                   q8_rows<8, 5>, q8_rows<8, 6>, q8_rows<8, 7>, q8_rows<8, 8>};
  constexpr Q8RowsFn by_rows3[] = {q8_rows<3, 1>, q8_rows<3, 2>, q8_rows<3, 3>, q8_rows<3, 4>,
                                   q8_rows<3, 5>, q8_rows<3, 6>, q8_rows<3, 7>, q8_rows<3, 8>};
  (b.w->bits == 4 ? by_rows4 : b.w->bits == 8 ? by_rows8 : by_rows3)[b.m - 1](b, row0, row1);
}

}  // namespace fsq::cpu
