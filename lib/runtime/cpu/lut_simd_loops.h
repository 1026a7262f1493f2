// The loops of the SIMD LUT kernels, written once over a vector-ops struct `Simd` that each
// ISA file defines (lut_kernels_avx2.cpp, lut_kernels_avx512.cpp). Internal linkage only, so
// each ISA file gets its own copy compiled with its own flags (uniform_isa.h says why).
// Include only from those files.
//
// Simd provides: kLanes; types Vec and Table; zero(), load(const float*), store(float*, Vec),
// store_partial(float*, Vec, int n), fmadd(a, b, c) = a * b + c, add, reduce_add(Vec),
// half(uint16_t) -> float; sparse_dot(x, col, val, count) = sum_e x[col[e]] * val[e] (col
// uint16_t or int32_t, in float); table<B>(const uint16_t* lut): one row's 2^B fp16 centroids as
// floats; block<B>(p, table, Vec w[8]): the weights of the 8 * kLanes codes starting at
// byte p, in the panel order of lut_isa.h, reading at most Simd::kBlockOverread bytes past them;
// weights<B>(p, n, avail, table): the weights of the n <= kLanes codes starting at byte p
// (in column order; other lanes finite), reading at most `avail` bytes from p.
#pragma once

#include <algorithm>
#include <cstdint>

#include "runtime/cpu/lut_isa.h"
#include "runtime/cpu/prefetch.h"

#define FSQ_ALWAYS_INLINE __attribute__((always_inline))

namespace fsq::cpu {
namespace {

// As in uniform_simd_loops.h: each row asks, spread over its blocks, for the codes about
// kLutPrefetchBytes further on to be brought into L2 (prefetcht1); the hardware prefetchers
// alone do not run far enough ahead of a row computed in tens of nanoseconds.
constexpr int64_t kLutPrefetchBytes = 16384;

// How the rows and columns of a GEMV are walked, per code width and batch size. With one
// activation row (decode) and 4-bit codes, two weight rows share each load of x and the
// columns go in chunks whose part of the x panel is at most kPanelChunkBytes, all rows of
// a thread's range per chunk, so that the chunk of x stays in L1 while the codes stream
// past it. Without either, a 64-byte block of codes costs 512 bytes of x loads, and once
// the panel nears L1's size (K = 11008: 44 KB) each row's codes evict it before the next
// row reuses it: LUT-4 ran at half the DRAM rate. 3-bit rows are not whole cache lines
// (48-byte blocks), so chunk boundaries would split lines between passes; measured on
// Zen 5 (bench_lut_kernels, 1 thread): 3-bit in pairs or chunks was 25-85 % slower, so it
// keeps one row, all columns at a time. With more activation rows the weights are already
// shared by all of them.
template <int B, int M>
constexpr int kRowsTogether = B == 4 && M == 1 ? 2 : 1;
template <int B>
constexpr bool kChunkColumns = B == 4;
constexpr int64_t kPanelChunkBytes = 16384;

// Independent accumulators per (weight row, activation row): an FMA has ~4 cycles of
// latency on two ports, so about 8 chains should be in flight in all. A row computed alone
// (the last of an odd range) uses the same chains as in a pair: results do not depend on how
// the rows were grouped, so neither on the thread split.
template <int B, int M>
constexpr int kChains = M == 1 ? 8 / kRowsTogether<B, M> : M == 2 ? 4 : M <= 4 ? 2 : 1;

// sparse[i] = sum over row n's nonzeros of x[i, col] * val, in float: Simd::sparse_dot
// gathers x a vector of nonzeros at a time (a fixed order, whatever the thread split).
template <class Simd, typename Col, int M>
FSQ_ALWAYS_INLINE inline void sparse_row(const LutGemvBatch& b, const Col* col, int64_t n, float* sparse) {
  const LutWeightsView& w = *b.w;
  const int64_t begin = w.row_ptr[n], count = w.row_ptr[n + 1] - begin;
  prefetch_csr_ahead(col, w.val, begin);
  for (int i = 0; i < M; ++i)
    sparse[i] = count > 0 ? Simd::sparse_dot(b.x + i * b.x_stride, col + begin, w.val + begin, count) : 0.0f;
}

// One chunk of columns of rows n .. n + R: whole blocks [blk0, blk1) of 8 vectors (each
// row's weights shared by all M rows of x, each load of x by all R rows); in the last
// chunk (blk1 == whole) also the rest of each row, vector by vector in column order. The
// chunk's dense sum is reduced and stored into y (first chunk) or added to it.
template <class Simd, int B, int M, int R>
FSQ_ALWAYS_INLINE inline void gemv_row_group(const LutGemvBatch& b, int64_t n, int64_t blk0, int64_t blk1,
                                             int64_t ahead_rows) {
  using Vec = typename Simd::Vec;
  constexpr int kLanes = Simd::kLanes, C = kChains<B, M>;
  constexpr int64_t kBlockCodes = 8 * kLanes, kBlockBytes = kLanes * B, kLevels = int64_t{1} << B;
  constexpr int64_t kPanelVector = int64_t{M} * kLanes;  // floats per panel vector (all M rows)
  const LutWeightsView& w = *b.w;
  const int64_t row_bytes = w.words_per_row * 4, total_bytes = w.rows * row_bytes;
  const int64_t whole = w.cols / kBlockCodes, vectors = (w.cols + kLanes - 1) / kLanes;
  const bool last_chunk = blk1 == whole;
  const uint8_t* rows[R];
  typename Simd::Table tables[R];
  Vec acc[R][M][C];
  for (int r = 0; r < R; ++r) {
    rows[r] = reinterpret_cast<const uint8_t*>(w.words + (n + r) * w.words_per_row);
    tables[r] = Simd::template table<B>(w.lut + (n + r) * kLevels);
    for (int i = 0; i < M; ++i)
      for (int c = 0; c < C; ++c) acc[r][i][c] = Simd::zero();
  }
  const int64_t avail = total_bytes - (n + R - 1) * row_bytes;  // bytes readable from the last row's start
  const bool prefetch = n + R - 1 + ahead_rows < w.rows;
  const uint8_t* ahead = prefetch ? rows[0] + ahead_rows * row_bytes : nullptr;
  if (prefetch && blk0 == 0) prefetch_to_l2(w.lut + (n + ahead_rows) * kLevels);
  // Whole blocks whose reads stay inside the weights (all but maybe the last row's last).
  int64_t fast = blk1;
  constexpr int64_t kOverread = B == 4 ? 0 : Simd::kBlockOverread;
  if (kOverread > 0 && last_chunk && fast * kBlockBytes + kOverread > avail)
    fast = std::max(blk0, avail >= kOverread ? (avail - kOverread) / kBlockBytes : 0);
  const float* x = b.panel + blk0 * 8 * kPanelVector;
  for (int64_t blk = blk0; blk < fast; ++blk) {
    if (prefetch)
      for (int r = 0; r < R; ++r) prefetch_lines(ahead + r * row_bytes, blk * kBlockBytes, (blk + 1) * kBlockBytes);
    Vec wv[R][8];
    for (int r = 0; r < R; ++r) Simd::template block<B>(rows[r] + blk * kBlockBytes, tables[r], wv[r]);
    for (int s = 0; s < 8; ++s)
      for (int i = 0; i < M; ++i) {
        const Vec xv = Simd::load(x + s * kPanelVector + i * kLanes);
        for (int r = 0; r < R; ++r) acc[r][i][s % C] = Simd::fmadd(xv, wv[r][s], acc[r][i][s % C]);
      }
    x += 8 * kPanelVector;
  }
  if (last_chunk) {
    if (prefetch)
      for (int r = 0; r < R; ++r) prefetch_lines(ahead + r * row_bytes, fast * kBlockBytes, row_bytes);
    int64_t v = fast * 8;
    if constexpr (B == 4 && Simd::kHalfBlock4) {
      if (lut_half_block(B, kLanes, w.cols)) {  // fast == whole for 4-bit
        Vec wv[R][4];
        for (int r = 0; r < R; ++r) Simd::half_block4(rows[r] + fast * kBlockBytes, tables[r], wv[r]);
        for (int s = 0; s < 4; ++s)
          for (int i = 0; i < M; ++i) {
            const Vec xv = Simd::load(x + s * kPanelVector + i * kLanes);
            for (int r = 0; r < R; ++r) acc[r][i][s % C] = Simd::fmadd(xv, wv[r][s], acc[r][i][s % C]);
          }
        x += 4 * kPanelVector;
        v += 4;
      }
    }
    for (; v < vectors; ++v) {
      const int64_t c0 = v * kLanes, byte = (c0 * B) >> 3;
      const int count = static_cast<int>(w.cols - c0 < kLanes ? w.cols - c0 : kLanes);
      for (int r = 0; r < R; ++r) {
        const Vec wv = Simd::template weights<B>(rows[r] + byte, count, avail + (R - 1 - r) * row_bytes - byte, tables[r]);
        for (int i = 0; i < M; ++i) acc[r][i][0] = Simd::fmadd(Simd::load(x + i * kLanes), wv, acc[r][i][0]);
      }
      x += kPanelVector;
    }
  }
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < M; ++i) {
      for (int c = 1; c < C; ++c) acc[r][i][0] = Simd::add(acc[r][i][0], acc[r][i][c]);
      float& out = b.y[i * b.y_stride + n + r];
      const float dense = Simd::reduce_add(acc[r][i][0]);
      out = blk0 == 0 ? dense : out + dense;
    }
}

// y[i, n] for n in [row0, row1): chunk by chunk of columns (fixed by cols, B and M alone,
// so the sums' order is the same for any thread split), kRowsTogether rows at a time, then
// any row left alone; then the rows' CSR parts. The nonzeros go in a pass of their own:
// rows' gathers then overlap one another instead of stalling each row between its dense
// codes (CSR cost at 0.45 %, LUT-3 at 11008x4096, 1 thread: +41 % -> +12 %).
template <class Simd, int B, int M, typename Col>
void gemv_rows_impl(const LutGemvBatch& b, const Col* col, int64_t row0, int64_t row1) {
  constexpr int R = kRowsTogether<B, M>;
  constexpr int64_t kBlockCodes = 8 * Simd::kLanes;
  const int64_t whole = b.w->cols / kBlockCodes;
  const int64_t chunk_blocks =
      kChunkColumns<B> ? std::max<int64_t>(1, kPanelChunkBytes / (kBlockCodes * M * int64_t{sizeof(float)})) : whole;
  // Each row asks for the codes about kLutPrefetchBytes further on (in the same chunk).
  const int64_t chunk_bytes = whole > 0 ? std::min(whole, chunk_blocks) * Simd::kLanes * B : b.w->words_per_row * 4;
  const int64_t ahead_rows = (kLutPrefetchBytes + chunk_bytes - 1) / chunk_bytes;
  int64_t blk0 = 0;
  do {
    const int64_t blk1 = std::min(whole, blk0 + chunk_blocks);
    int64_t n = row0;
    for (; n + R <= row1; n += R) gemv_row_group<Simd, B, M, R>(b, n, blk0, blk1, ahead_rows);
    for (; n < row1; ++n) gemv_row_group<Simd, B, M, 1>(b, n, blk0, blk1, ahead_rows);
    blk0 = blk1;
  } while (blk0 < whole);
  if (col == nullptr) return;
  for (int64_t n = row0; n < row1; ++n) {
    float sparse[M];
    sparse_row<Simd, Col, M>(b, col, n, sparse);
    for (int i = 0; i < M; ++i) b.y[i * b.y_stride + n] += sparse[i];
  }
}

template <class Simd, int B, int M>
void gemv_rows_fixed(const LutGemvBatch& b, int64_t row0, int64_t row1) {
  const LutWeightsView& w = *b.w;
  if (w.row_ptr != nullptr && w.col_type == LutColType::I32)
    gemv_rows_impl<Simd, B, M>(b, static_cast<const int32_t*>(w.col), row0, row1);
  else
    gemv_rows_impl<Simd, B, M>(b, w.row_ptr != nullptr ? static_cast<const uint16_t*>(w.col) : nullptr, row0, row1);
}

template <class Simd, int B>
void gemv_rows_bits(const LutGemvBatch& b, int64_t row0, int64_t row1) {
  static_assert(kMaxGemvRows == 8, "one instantiation per batch size below");
  constexpr LutGemvRowsFn by_rows[] = {gemv_rows_fixed<Simd, B, 1>, gemv_rows_fixed<Simd, B, 2>,
                                       gemv_rows_fixed<Simd, B, 3>, gemv_rows_fixed<Simd, B, 4>,
                                       gemv_rows_fixed<Simd, B, 5>, gemv_rows_fixed<Simd, B, 6>,
                                       gemv_rows_fixed<Simd, B, 7>, gemv_rows_fixed<Simd, B, 8>};
  by_rows[b.m - 1](b, row0, row1);
}

template <class Simd>
void gemv_rows_simd(const LutGemvBatch& b, int64_t row0, int64_t row1) {
  if (b.w->bits == 3)
    gemv_rows_bits<Simd, 3>(b, row0, row1);
  else
    gemv_rows_bits<Simd, 4>(b, row0, row1);
}

// The table entries in column order (a lookup copies them: bit-exact), then the row's
// nonzeros added in float exactly as dequantize_lut adds them.
template <class Simd, int B>
void dequantize_rows_bits(const LutWeightsView& w, int64_t row0, int64_t nrows, float* out) {
  constexpr int kLanes = Simd::kLanes;
  constexpr int64_t kLevels = int64_t{1} << B;
  const int64_t row_bytes = w.words_per_row * 4, total_bytes = w.rows * row_bytes;
  for (int64_t r = row0; r < row0 + nrows; ++r) {
    const auto* row = reinterpret_cast<const uint8_t*>(w.words + r * w.words_per_row);
    const int64_t avail = total_bytes - r * row_bytes;
    const typename Simd::Table table = Simd::template table<B>(w.lut + r * kLevels);
    float* dst = out + (r - row0) * w.cols;
    for (int64_t c0 = 0; c0 < w.cols; c0 += kLanes) {
      const int64_t byte = (c0 * B) >> 3;
      const int count = static_cast<int>(w.cols - c0 < kLanes ? w.cols - c0 : kLanes);
      const auto v = Simd::template weights<B>(row + byte, count, avail - byte, table);
      if (count == kLanes)
        Simd::store(dst + c0, v);
      else
        Simd::store_partial(dst + c0, v, count);
    }
    if (w.row_ptr == nullptr) continue;
    for (int64_t e = w.row_ptr[r]; e < w.row_ptr[r + 1]; ++e) {
      const int64_t k = w.col_type == LutColType::U16 ? static_cast<const uint16_t*>(w.col)[e]
                                                      : static_cast<const int32_t*>(w.col)[e];
      dst[k] += Simd::half(w.val[e]);
    }
  }
}

template <class Simd>
void dequantize_rows_simd(const LutWeightsView& w, int64_t row0, int64_t nrows, float* out) {
  if (w.bits == 3)
    dequantize_rows_bits<Simd, 3>(w, row0, nrows, out);
  else
    dequantize_rows_bits<Simd, 4>(w, row0, nrows, out);
}

}  // namespace
}  // namespace fsq::cpu

#undef FSQ_ALWAYS_INLINE
