// The loop of the int8-activation LUT GEMV (lut_q8_kernels.h), written once over a
// `Codes` policy that each ISA file defines: kChunkCols columns per chunk (its codes become
// kChunkCols unsigned table bytes), kChunkBytes code bytes per full chunk, kDots vpdpbusd of
// 64 bytes per chunk; Table, what decode looks codes up in, and table(t) making it from a
// row's 16 table bytes t; codes(batch): where the rows' codes are and their stride;
// tail_bytes(cols): the code bytes of a row's last, partial chunk (0 when none); and
// decode(p, bytes, avail, table, out[kDots]): the chunk's table bytes from its codes at p
// (bytes of them), reading at most avail bytes from p (what is left of the matrix).
// Masked loads only where a plain one could pass the matrix's end: on Zen 5 a masked load
// that straddles two cache lines cost the 3-bit GEMV two thirds of its rate at 11008
// columns. Internal linkage only, so each
// ISA file gets its own copy compiled with its own flags (uniform_isa.h says why). Include
// only from lut_q8_avx512vnni.cpp and lut_q8_avx512vbmi.cpp. The CSR part: lut_q8_sparse.h.
//
// Per chunk and weight row: the codes become table bytes, then per row of x kDots vpdpbusd
// against the panel (q8_panel.h: 4-bit chunks hold the even then the odd columns; the 3-bit
// planes are read against the same layout), the 16 int32 lane sums converted to float and
// scaled by their activation blocks' d. The table's bias of 128 is taken off once per row
// (128 * sum_b d[b] * sum of codes), then the row's scale applied. R weight rows run
// together, sharing the loads of x (SmolLM2's rows are 4.5 chunks long). The CSR part goes in
// a pass of its own, as in lut_gemv.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "runtime/cpu/lut_avx512_ops.h"
#include "runtime/cpu/lut_q8_isa.h"
#include "runtime/cpu/lut_q8_sparse.h"
#include "runtime/cpu/prefetch.h"
#include "runtime/cpu/uniform_q8_isa.h"  // kQ8ChunkBytes, kQ8ChunkLanes, kQ8PrefetchBytes

namespace fsq::cpu {
namespace {

constexpr float kLutQ8TableBias = 128.0f;

// Where a matrix's codes are as a policy reads them: row n at base + n * row_bytes, none at
// or past end.
struct LutQ8Codes {
  const uint8_t* base = nullptr;
  int64_t row_bytes = 0;
  const uint8_t* end = nullptr;
};

// The packed words (FORMAT.md) as a policy reads them.
LutQ8Codes lut_q8_packed_codes(const LutQ8Batch& b) {
  const auto* words = reinterpret_cast<const uint8_t*>(b.w->words);
  const int64_t row_bytes = b.w->words_per_row * 4;
  return {words, row_bytes, words + b.w->rows * row_bytes};
}

struct LutQ8Rows {
  const LutQ8Batch* b = nullptr;
  LutQ8Codes codes;
  int64_t full_chunks = 0, tail_bytes = 0, ahead_rows = 0, ahead_bytes = 0;
};

// Output rows n .. n + R - 1 for all M rows of x, dense part.
template <class Codes, int M, int R>
__attribute__((always_inline)) inline void lut_q8_row_block(const LutQ8Rows& ctx, int64_t n) {
  constexpr int64_t kChunkBytes = Codes::kChunkBytes;
  constexpr int D = Codes::kDots;
  const LutQ8Batch& b = *ctx.b;
  const LutWeightsView& w = *b.w;
  const uint8_t* rows = ctx.codes.base + n * ctx.codes.row_bytes;
  const uint8_t* end = ctx.codes.end;
  const bool prefetch = n + R - 1 + ctx.ahead_rows < w.rows;
  typename Codes::Table table[R];
  __m512 acc[R][M];
  for (int r = 0; r < R; ++r) {
    table[r] = Codes::table(b.t->tables + (n + r) * 16);
    for (int i = 0; i < M; ++i) acc[r][i] = _mm512_setzero_ps();
  }
  const auto chunk = [&](int64_t c, int64_t bytes) __attribute__((always_inline)) {
    __m512i u[R][D];
    for (int r = 0; r < R; ++r) {
      const uint8_t* p = rows + r * ctx.codes.row_bytes + c * kChunkBytes;
      if (prefetch) prefetch_to_l2(p + ctx.ahead_bytes);
      Codes::decode(p, bytes, end - p, table[r], u[r]);
    }
    for (int i = 0; i < M; ++i) {
      const int8_t* x = b.q8.codes + i * b.q8.codes_stride + c * D * kQ8ChunkBytes;
      __m512i xv[D];
      for (int k = 0; k < D; ++k) xv[k] = _mm512_loadu_si512(x + k * kQ8ChunkBytes);
      const __m512 lane_scales = _mm512_loadu_ps(b.q8.lane_scales + i * b.q8.lane_scales_stride + c * kQ8ChunkLanes);
      for (int r = 0; r < R; ++r) {
        __m512i dot = _mm512_setzero_si512();
        for (int k = 0; k < D; ++k) dot = _mm512_dpbusd_epi32(dot, u[r][k], xv[k]);
        acc[r][i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), lane_scales, acc[r][i]);
      }
    }
  };
  for (int64_t c = 0; c < ctx.full_chunks; ++c) chunk(c, kChunkBytes);
  if (ctx.tail_bytes != 0) chunk(ctx.full_chunks, ctx.tail_bytes);
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < M; ++i) {
      const float dense = _mm512_reduce_add_ps(acc[r][i]) - kLutQ8TableBias * b.q8.group_sums[i * b.q8.group_sums_stride];
      b.y[i * b.y_stride + n + r] = b.t->scales[n + r] * dense;
    }
}

// x[c[0]], ..., x[c[15]] from 16 scalar loads: on Zen 4, in a loop over 0.45 % of a
// 4096 x 4096 matrix's nonzeros as slices, 21 us against 32 us with vgatherdps.
__attribute__((always_inline)) inline __m512 lut_q8_lookup16(const float* x, const uint16_t* c) {
  const __m128 q0 = _mm_setr_ps(x[c[0]], x[c[1]], x[c[2]], x[c[3]]);
  const __m128 q1 = _mm_setr_ps(x[c[4]], x[c[5]], x[c[6]], x[c[7]]);
  const __m128 q2 = _mm_setr_ps(x[c[8]], x[c[9]], x[c[10]], x[c[11]]);
  const __m128 q3 = _mm_setr_ps(x[c[12]], x[c[13]], x[c[14]], x[c[15]]);
  return _mm512_insertf32x4(_mm512_insertf32x4(_mm512_insertf32x4(_mm512_castps128_ps512(q0), q1, 1), q2, 2), q3, 3);
}

// The CSR part of rows [row0, row1) from its slices (LutQ8SparseSlices): the slices of the
// windows that meet the range, lanes whose rows lie outside it computed but not added (a
// thread's range starts on a multiple of 16 rows, a window on one of 64). Each lane's sum
// is one FMA chain in column order, added to y once, whatever the split over threads. On
// Zen 4 (bench_lut_kernels 4096x4096, 1 thread, paired, two runs each) this took the CSR
// part's cost from +11-13 % row by row to +8-10 % (lut_q8_sparse_slices_apply: where).
template <int M>
void lut_q8_sparse_slices(const LutQ8Batch& b, int64_t row0, int64_t row1) {
  const LutQ8SparseSlices& sl = *b.t->sparse_slices;
  constexpr int64_t kSlicesPerWindow = kLutQ8SliceWindowRows / kLutQ8SliceRows;
  const int64_t first = row0 / kLutQ8SliceWindowRows * kSlicesPerWindow;
  const int64_t last =
      std::min(sl.slices, (row1 + kLutQ8SliceWindowRows - 1) / kLutQ8SliceWindowRows * kSlicesPerWindow);
  const __m512i lo = _mm512_set1_epi32(static_cast<int32_t>(row0)), hi = _mm512_set1_epi32(static_cast<int32_t>(row1));
  for (int64_t s = first; s < last; ++s) {
    const __m512i rows = _mm512_loadu_si512(sl.lane_rows + s * kLutQ8SliceRows);
    const __m512i counts = _mm512_loadu_si512(sl.lane_counts + s * kLutQ8SliceRows);
    const __mmask16 live = _mm512_cmpge_epi32_mask(rows, lo) & _mm512_cmpgt_epi32_mask(hi, rows) &
                           _mm512_cmpgt_epi32_mask(counts, _mm512_setzero_si512());
    if (live == 0) continue;
    __m512 acc[M];
    for (int i = 0; i < M; ++i) acc[i] = _mm512_setzero_ps();
    const uint16_t* p = sl.steps + int64_t{sl.slice_steps[s]} * 2 * kLutQ8SliceRows;
    const int32_t length = sl.slice_steps[s + 1] - sl.slice_steps[s];
    for (int32_t j = 0; j < length; ++j, p += 2 * kLutQ8SliceRows) {
      prefetch_to_l2(address_ahead(p, kCsrPrefetchNonzeros * int64_t{sizeof(uint16_t)}));
      const __mmask16 k = _mm512_cmpgt_epi32_mask(counts, _mm512_set1_epi32(j));
      const __m512 v = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kLutQ8SliceRows)));
      for (int i = 0; i < M; ++i)  // lanes past their count keep their sum (x there may be Inf)
        acc[i] = _mm512_mask_blend_ps(k, acc[i], _mm512_fmadd_ps(lut_q8_lookup16(b.x + i * b.x_stride, p), v, acc[i]));
    }
    alignas(64) int32_t lane_row[kLutQ8SliceRows];
    _mm512_store_si512(lane_row, rows);
    for (int i = 0; i < M; ++i) {
      alignas(64) float sum[kLutQ8SliceRows];
      _mm512_store_ps(sum, acc[i]);
      float* y = b.y + i * b.y_stride;
      for (int l = 0; l < kLutQ8SliceRows; ++l)
        if ((live >> l) & 1) y[lane_row[l]] += sum[l];
    }
  }
}

template <class Codes, int M>
void lut_q8_rows_m(const LutQ8Batch& b, int64_t row0, int64_t row1) {
  // Rows per block: enough accumulators in flight for few rows of x, within 32 registers.
  constexpr int R = M <= 2 ? 4 : M <= 4 ? 2 : 1;
  const LutWeightsView& w = *b.w;
  LutQ8Rows ctx;
  ctx.b = &b;
  ctx.codes = Codes::codes(b);
  ctx.full_chunks = w.cols / Codes::kChunkCols;
  ctx.tail_bytes = Codes::tail_bytes(w.cols);
  const int64_t row_bytes = ctx.codes.row_bytes;
  // Past the R rows read together: 8 KiB ahead of long rows would still be inside them.
  ctx.ahead_rows = R + (kQ8PrefetchBytes + row_bytes - 1) / row_bytes;
  ctx.ahead_bytes = ctx.ahead_rows * row_bytes;
  int64_t n = row0;
  for (; n + R <= row1; n += R) lut_q8_row_block<Codes, M, R>(ctx, n);
  for (; n < row1; ++n) lut_q8_row_block<Codes, M, 1>(ctx, n);
  if (b.t->sparse_slices != nullptr)
    lut_q8_sparse_slices<M>(b, row0, row1);
  else
    lut_q8_sparse<Avx512, M>(b, row0, row1);
}

template <class Codes>
void lut_q8_rows(const LutQ8Batch& b, int64_t row0, int64_t row1) {
  static_assert(kMaxGemvRows == 8, "one instantiation per batch size below");
  using RowsFn = void (*)(const LutQ8Batch&, int64_t, int64_t);
  constexpr RowsFn by_rows[] = {lut_q8_rows_m<Codes, 1>, lut_q8_rows_m<Codes, 2>, lut_q8_rows_m<Codes, 3>,
                                lut_q8_rows_m<Codes, 4>, lut_q8_rows_m<Codes, 5>, lut_q8_rows_m<Codes, 6>,
                                lut_q8_rows_m<Codes, 7>, lut_q8_rows_m<Codes, 8>};
  by_rows[b.m - 1](b, row0, row1);
}

}  // namespace
}  // namespace fsq::cpu
