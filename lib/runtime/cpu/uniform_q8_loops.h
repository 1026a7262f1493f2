// The loop of the int8-activation uniform GEMV (uniform_q8_kernels.h; uniform_q8_isa.h has
// the panel's layout), written once over a `Codes` policy that each AVX-512 file defines:
// kBits, kChunkCols columns per chunk (kChunkCols * kBits / 8 code bytes), kDots vpdpbusd
// of 64 bytes per chunk, and decode(p, bytes, avail, out[kDots]): the chunk's unsigned codes
// from its packed bytes at p (bytes of them), reading at most avail bytes from p (what is left
// of the matrix). Internal linkage only, so each ISA file gets its own copy compiled with its
// own flags (uniform_isa.h says why). Include only from uniform_q8_avx512vnni.cpp (4- and
// 8-bit codes) and uniform_q8_avx512vbmi.cpp (3-bit).
//
// Per chunk and row of x: kDots vpdpbusd of the codes against the panel, the 16 int32 lane
// sums converted to float and scaled by weight scale x activation scale per lane. The zero
// points' part (sum_g scale * zero * group_sums[g]) starts each accumulator. SmolLM2's rows
// are short (576 columns: 4.5 chunks of 4-bit codes), so the per-row work counts: R weight
// rows run together, sharing the loads of x, and their R sums come out of one transposing
// reduction.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "runtime/cpu/prefetch.h"
#include "runtime/cpu/reduce4_avx512.h"
#include "runtime/cpu/uniform_q8_isa.h"

namespace fsq::cpu {
namespace {

constexpr int kQ8Lanes = 16;

// What every row of one call shares.
struct Q8RowsContext {
  const Q8Batch* b = nullptr;
  const uint8_t* end = nullptr;  // one past the matrix's last code byte
  int64_t groups = 0, full_chunks = 0, tail_bytes = 0, row_bytes = 0, ahead_rows = 0, ahead_bytes = 0;
  // Chunk c's first group: 0, advanced by groups_per_chunk after every chunks_per_group
  // chunks (groups start at chunk boundaries or span whole chunks, as uniform_q8_gemv.cpp
  // checks, or there is only one).
  int64_t groups_per_chunk = 1, chunks_per_group = 1;
  bool lane_groups = false;  // groups narrower than a chunk: lane j in group (chunk's first) + lane_group[j]
  __mmask16 chunk_groups_mask = 0, tail_groups_mask = 0;  // the groups a full / the tail chunk has
  __m512i lane_group;
};

// Output rows n .. n + R - 1 for all M rows of x. kScalesInRegisters: groups are narrower
// than a chunk and a row has at most 16, so each row's scales are converted once into one
// register and a chunk's lanes pick theirs with one permute; otherwise each chunk loads,
// converts and permutes its own (per row and chunk: a third of a 4-bit chunk's work at
// batch 1; SmolLM2's 576-column rows at g64 have 9 groups).
template <class Codes, int M, int R, bool kScalesInRegisters>
__attribute__((always_inline)) inline void q8_row_block(const Q8RowsContext& ctx, int64_t n) {
  constexpr int D = Codes::kDots;
  constexpr int64_t kChunkBytes = Codes::kChunkCols * Codes::kBits / 8;
  const Q8Batch& b = *ctx.b;
  const UniformWeightsView& w = *b.w;
  const int64_t groups = ctx.groups;
  const auto* rows = reinterpret_cast<const uint8_t*>(w.words + n * w.words_per_row);
  const uint16_t* scales = w.scales + n * groups;
  const uint8_t* zeros = w.zeros ? w.zeros + n * groups : nullptr;
  const bool prefetch = n + R - 1 + ctx.ahead_rows < w.rows;
  if (prefetch) {
    prefetch_lines(scales + ctx.ahead_rows * groups, 0, R * groups * 2);
    if (zeros) prefetch_lines(zeros + ctx.ahead_rows * groups, 0, R * groups);
  }
  // The accumulators start at minus the zero points' part.
  __m512 acc[R][M];
  __m512 row_scales[R];  // kScalesInRegisters: row r's group scales, zero past its last group
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < M; ++i) acc[r][i] = _mm512_setzero_ps();
  for (int64_t g0 = 0; g0 < groups; g0 += kQ8Lanes) {
    const int count = static_cast<int>(groups - g0 < kQ8Lanes ? groups - g0 : kQ8Lanes);
    const auto valid = static_cast<__mmask16>((1u << count) - 1);
    __m512 sums[M];
    for (int i = 0; i < M; ++i) sums[i] = _mm512_maskz_loadu_ps(valid, b.q8.group_sums + i * b.q8.group_sums_stride + g0);
    for (int r = 0; r < R; ++r) {
      const __m512 s = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(valid, scales + r * groups + g0));
      if constexpr (kScalesInRegisters) row_scales[r] = s;
      const __m512 z = zeros ? _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(valid, zeros + r * groups + g0)))
                             : _mm512_set1_ps(static_cast<float>(1 << (Codes::kBits - 1)));
      const __m512 sz = _mm512_mul_ps(s, z);
      for (int i = 0; i < M; ++i) acc[r][i] = _mm512_fnmadd_ps(sz, sums[i], acc[r][i]);
    }
  }
  // g: the group of the chunk's first column, counted, not divided (an idiv's latency sat
  // on the scale loads' path). The chunk's scales are converted from the weights' fp16
  // ones in registers.
  const auto chunk = [&](int64_t c, int64_t g, int64_t bytes, bool tail) __attribute__((always_inline)) {
    __m512i codes[R][D];
    __m512 s[R];
    // kScalesInRegisters: the group of each lane.
    const __m512i lane_groups = _mm512_add_epi32(ctx.lane_group, _mm512_set1_epi32(static_cast<int32_t>(g)));
    for (int r = 0; r < R; ++r) {
      const uint8_t* p = rows + r * ctx.row_bytes + c * kChunkBytes;
      if (prefetch) prefetch_to_l2(p + ctx.ahead_bytes);
      Codes::decode(p, bytes, ctx.end - p, codes[r]);
      if constexpr (kScalesInRegisters) {
        s[r] = _mm512_permutexvar_ps(lane_groups, row_scales[r]);
      } else {
        const uint16_t* sr = scales + r * groups + g;
        s[r] = ctx.lane_groups ? _mm512_permutexvar_ps(
                                     ctx.lane_group, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(
                                                         tail ? ctx.tail_groups_mask : ctx.chunk_groups_mask, sr)))
                               : _mm512_cvtph_ps(_mm256_set1_epi16(static_cast<int16_t>(*sr)));
      }
    }
    for (int i = 0; i < M; ++i) {
      const int8_t* x = b.q8.codes + i * b.q8.codes_stride + c * D * kQ8ChunkBytes;
      __m512i xv[D];
      for (int k = 0; k < D; ++k) xv[k] = _mm512_loadu_si512(x + k * kQ8ChunkBytes);
      const __m512 lane_scales = _mm512_loadu_ps(b.q8.lane_scales + i * b.q8.lane_scales_stride + c * kQ8Lanes);
      for (int r = 0; r < R; ++r) {
        __m512i dot = _mm512_setzero_si512();
        for (int k = 0; k < D; ++k) dot = _mm512_dpbusd_epi32(dot, codes[r][k], xv[k]);
        acc[r][i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(s[r], lane_scales), acc[r][i]);
      }
    }
  };
  int64_t c = 0, g = 0;
  for (int64_t left = ctx.chunks_per_group; c < ctx.full_chunks; ++c) {
    chunk(c, g, kChunkBytes, false);
    if (--left == 0) {
      g += ctx.groups_per_chunk;
      left = ctx.chunks_per_group;
    }
  }
  if (ctx.tail_bytes != 0) chunk(c, g, ctx.tail_bytes, true);
  for (int i = 0; i < M; ++i) {
    float* y = b.y + i * b.y_stride + n;
    if constexpr (R == 4) {
      const __m512 v[4] = {acc[0][i], acc[1][i], acc[2][i], acc[3][i]};
      _mm_storeu_ps(y, reduce_add4_avx512(v));
    } else {
      for (int r = 0; r < R; ++r) y[r] = _mm512_reduce_add_ps(acc[r][i]);
    }
  }
}

template <class Codes, int M, int R, bool kScalesInRegisters>
void q8_rows_blocks(const Q8RowsContext& ctx, int64_t row0, int64_t row1) {
  int64_t n = row0;
  for (; n + R <= row1; n += R) q8_row_block<Codes, M, R, kScalesInRegisters>(ctx, n);
  for (; n < row1; ++n) q8_row_block<Codes, M, 1, kScalesInRegisters>(ctx, n);
}

template <class Codes, int M>
void q8_rows_m(const Q8Batch& b, int64_t row0, int64_t row1) {
  constexpr int64_t kChunkCols = Codes::kChunkCols;
  // Rows per block: enough accumulators in flight for few rows of x, within 32 registers.
  constexpr int R = M <= 2 ? 4 : M <= 4 ? 2 : 1;
  const UniformWeightsView& w = *b.w;
  Q8RowsContext ctx;
  ctx.b = &b;
  ctx.end = reinterpret_cast<const uint8_t*>(w.words + w.rows * w.words_per_row);
  ctx.groups = w.cols / w.group_cols;
  ctx.full_chunks = w.cols / kChunkCols;
  ctx.tail_bytes = ((w.cols % kChunkCols) * Codes::kBits + 7) / 8;
  ctx.lane_groups = ctx.groups > 1 && w.group_cols < kChunkCols;
  ctx.groups_per_chunk = w.group_cols < kChunkCols ? kChunkCols / w.group_cols : 1;
  // One group (per-channel scales) may end inside a chunk: g then stays 0.
  ctx.chunks_per_group = ctx.groups == 1 ? ctx.full_chunks + 1 : w.group_cols < kChunkCols ? 1 : w.group_cols / kChunkCols;
  alignas(64) int32_t lane_group[kQ8Lanes];
  // Lane j covers columns from j * chunk / 16: no division per lane (this runs per task of rows).
  for (int j = 0; j < kQ8Lanes; ++j) lane_group[j] = static_cast<int32_t>(j * ctx.groups_per_chunk / kQ8Lanes);
  ctx.lane_group = _mm512_load_si512(lane_group);
  ctx.row_bytes = w.words_per_row * 4;
  // At least the R rows read together: 8 KiB ahead of long rows (K = 11008: 5504 bytes)
  // fell inside them, and down_proj ran at half the rate of q/o_proj (1 thread, from DRAM).
  const int64_t ahead_rows = (kQ8PrefetchBytes + ctx.row_bytes - 1) / ctx.row_bytes;
  ctx.ahead_rows = ahead_rows > R ? ahead_rows : R;
  ctx.ahead_bytes = ctx.ahead_rows * ctx.row_bytes;
  if (ctx.lane_groups) {
    const int64_t left = ctx.groups - ctx.full_chunks * ctx.groups_per_chunk;
    const int64_t tail_groups = left < ctx.groups_per_chunk ? (left > 0 ? left : 0) : ctx.groups_per_chunk;
    ctx.chunk_groups_mask = static_cast<__mmask16>((1u << ctx.groups_per_chunk) - 1);
    ctx.tail_groups_mask = static_cast<__mmask16>((1u << tail_groups) - 1);
  }
  // Only for groups narrower than a chunk: with one group per chunk or fewer, the old way is
  // a broadcast and a conversion, and the permute measured slower (8-bit g64 rows of 576
  // columns: 19-25 -> 17-20 GB/s, 1 thread). The last chunk's last lane reads group
  // chunks * groups_per_chunk - 1 (the tail's lanes past the matrix multiply zero codes).
  const int64_t chunks = ctx.full_chunks + (ctx.tail_bytes != 0 ? 1 : 0);
  if (ctx.lane_groups && chunks * ctx.groups_per_chunk <= kQ8Lanes)
    q8_rows_blocks<Codes, M, R, true>(ctx, row0, row1);
  else
    q8_rows_blocks<Codes, M, R, false>(ctx, row0, row1);
}

template <class Codes>
void q8_rows(const Q8Batch& b, int64_t row0, int64_t row1) {
  static_assert(kMaxGemvRows == 8, "one instantiation per batch size below");
  constexpr Q8RowsFn by_rows[] = {q8_rows_m<Codes, 1>, q8_rows_m<Codes, 2>, q8_rows_m<Codes, 3>,
                                  q8_rows_m<Codes, 4>, q8_rows_m<Codes, 5>, q8_rows_m<Codes, 6>,
                                  q8_rows_m<Codes, 7>, q8_rows_m<Codes, 8>};
  by_rows[b.m - 1](b, row0, row1);
}

}  // namespace
}  // namespace fsq::cpu
