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
// byte p, in the panel order of lut_isa.h, reading at most kBlockOverread bytes past them;
// weights<B>(p, n, avail, table): the weights of the n <= kLanes codes starting at byte p
// (in column order; other lanes finite), reading at most `avail` bytes from p.
#pragma once

#include <cstdint>

#include "runtime/cpu/lut_isa.h"
#include "runtime/cpu/prefetch.h"

#define FSQ_ALWAYS_INLINE __attribute__((always_inline))

namespace fsq::cpu {
namespace {

// Bytes block<3> may read past a block's codes (AVX-512 loads 16 bytes for 12).
constexpr int64_t kBlockOverread = 4;

// As in uniform_simd_loops.h: each row asks, spread over its blocks, for the codes about
// kLutPrefetchBytes further on to be brought into L2 (prefetcht1); the hardware prefetchers
// alone do not run far enough ahead of a row computed in tens of nanoseconds.
constexpr int64_t kLutPrefetchBytes = 16384;

// Independent accumulators per activation row: an FMA has ~4 cycles of latency on two
// ports, so about 8 chains should be in flight in all.
template <int M>
constexpr int kChains = M == 1 ? 8 : M == 2 ? 4 : M <= 4 ? 2 : 1;

// sparse[i] = sum over row n's nonzeros of x[i, col] * val, in float: Simd::sparse_dot
// gathers x a vector of nonzeros at a time (a fixed order, whatever the thread split).
template <class Simd, typename Col, int M>
FSQ_ALWAYS_INLINE inline void sparse_row(const LutGemvBatch& b, const Col* col, int64_t n, float* sparse) {
  const LutWeightsView& w = *b.w;
  const int64_t begin = w.row_ptr[n], count = w.row_ptr[n + 1] - begin;
  for (int i = 0; i < M; ++i)
    sparse[i] = count > 0 ? Simd::sparse_dot(b.x + i * b.x_stride, col + begin, w.val + begin, count) : 0.0f;
}

// y[i, n] for n in [row0, row1): whole blocks of 8 vectors (their weights shared by all M
// rows of x), then the rest of the row vector by vector in column order, then the row's
// nonzeros; the dense accumulators are reduced once per row.
template <class Simd, int B, int M, typename Col>
void gemv_rows_impl(const LutGemvBatch& b, const Col* col, int64_t row0, int64_t row1) {
  using Vec = typename Simd::Vec;
  constexpr int kLanes = Simd::kLanes, C = kChains<M>;
  constexpr int64_t kBlockCodes = 8 * kLanes, kBlockBytes = kLanes * B, kLevels = int64_t{1} << B;
  constexpr int64_t kPanelVector = int64_t{M} * kLanes;  // floats per panel vector (all M rows)
  const LutWeightsView& w = *b.w;
  const int64_t row_bytes = w.words_per_row * 4, total_bytes = w.rows * row_bytes;
  const int64_t whole = w.cols / kBlockCodes, vectors = (w.cols + kLanes - 1) / kLanes;
  const int64_t ahead_rows = (kLutPrefetchBytes + row_bytes - 1) / row_bytes;
  for (int64_t n = row0; n < row1; ++n) {
    const auto* row = reinterpret_cast<const uint8_t*>(w.words + n * w.words_per_row);
    const int64_t avail = total_bytes - n * row_bytes;  // bytes readable from the row's start
    const bool prefetch = n + ahead_rows < w.rows;
    const uint8_t* ahead = prefetch ? row + ahead_rows * row_bytes : nullptr;
    if (prefetch) prefetch_to_l2(w.lut + (n + ahead_rows) * kLevels);
    const typename Simd::Table table = Simd::template table<B>(w.lut + n * kLevels);
    Vec acc[M][C];
    for (int i = 0; i < M; ++i)
      for (int c = 0; c < C; ++c) acc[i][c] = Simd::zero();
    // Whole blocks whose reads stay inside the weights (all but maybe the last row's last).
    int64_t fast = whole;
    if (B != 4 && fast * kBlockBytes + kBlockOverread > avail)
      fast = avail >= kBlockOverread ? (avail - kBlockOverread) / kBlockBytes : 0;
    const float* x = b.panel;
    for (int64_t blk = 0; blk < fast; ++blk) {
      if (prefetch) prefetch_lines(ahead, blk * kBlockBytes, (blk + 1) * kBlockBytes);
      Vec wv[8];
      Simd::template block<B>(row + blk * kBlockBytes, table, wv);
      for (int s = 0; s < 8; ++s)
        for (int i = 0; i < M; ++i)
          acc[i][s % C] = Simd::fmadd(Simd::load(x + s * kPanelVector + i * kLanes), wv[s], acc[i][s % C]);
      x += 8 * kPanelVector;
    }
    if (prefetch) prefetch_lines(ahead, fast * kBlockBytes, row_bytes);
    for (int64_t v = fast * 8; v < vectors; ++v) {
      const int64_t c0 = v * kLanes, byte = (c0 * B) >> 3;
      const int count = static_cast<int>(w.cols - c0 < kLanes ? w.cols - c0 : kLanes);
      const Vec wv = Simd::template weights<B>(row + byte, count, avail - byte, table);
      for (int i = 0; i < M; ++i) acc[i][0] = Simd::fmadd(Simd::load(x + i * kLanes), wv, acc[i][0]);
      x += kPanelVector;
    }
    float sparse[M];
    if (col != nullptr)
      sparse_row<Simd, Col, M>(b, col, n, sparse);
    else
      for (int i = 0; i < M; ++i) sparse[i] = 0.0f;
    for (int i = 0; i < M; ++i) {
      for (int c = 1; c < C; ++c) acc[i][0] = Simd::add(acc[i][0], acc[i][c]);
      b.y[i * b.y_stride + n] = Simd::reduce_add(acc[i][0]) + sparse[i];
    }
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
