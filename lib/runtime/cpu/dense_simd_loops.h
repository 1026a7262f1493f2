// The dense GEMV loop shared by dense_kernels_avx2.cpp and dense_kernels_avx512.cpp, over
// a Simd struct (load, load_partial, fmadd, add, reduce_add, zero, kLanes). Each weight
// vector is loaded once and multiplied into the accumulators of every batch row; two
// accumulators per row keep two FMA chains in flight at batch 1.
//
// Weights come from DRAM in a decode step (a model is far larger than L3), and one core's
// hardware prefetcher does not run far enough ahead of this loop: each step asks for
// the lines dense_prefetch_bytes further on (measured; prefetch.h says which hint), as the
// uniform kernels do (uniform_simd_loops.h).
#pragma once

#include <cstdint>
#include <utility>

#include "runtime/cpu/dense_isa.h"
#include "runtime/cpu/prefetch.h"

namespace fsq::cpu {
namespace {

// With the weights in huge pages (runtime/weight_memory.h) batch 1 does best asking only 2 KiB
// ahead, batches of 2+ (more arithmetic per byte) 8 KiB. Measured on a 2-core Zen 4 VM, 1
// thread: this loop at batch 1 over 540 MB of SmolLM2's f32 shapes read 28.4 GB/s at 2 KiB,
// 21.4 at 8 KiB; SmolLM2 f32 decode batch 1 ran 50-52 tok/s at 2 KiB, 44-45 with no prefetch;
// batch 8 160-167 at 8 KiB, 104-113 with none.
constexpr int64_t dense_prefetch_bytes(int m) { return m == 1 ? 2048 : 8192; }

template <typename Simd, int M>
void dense_rows_m(const DenseBatch& b, int64_t row0, int64_t row1) {
  using Vec = typename Simd::Vec;
  constexpr int64_t L = Simd::kLanes;
  const DenseWeightsView& w = *b.w;
  const int64_t K = w.cols, pairs_end = K / (2 * L) * (2 * L);
  const float* end = w.weights + (w.rows - 1) * w.row_stride + K;
  constexpr int64_t ahead = dense_prefetch_bytes(M) / sizeof(float);
  for (int64_t n = row0; n < row1; ++n) {
    const float* wr = w.weights + n * w.row_stride;
    const bool prefetch = wr + K + ahead <= end;
    Vec acc0[M], acc1[M];
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) acc0[i] = acc1[i] = Simd::zero();
    int64_t k = 0;
    for (; k < pairs_end; k += 2 * L) {
      if (prefetch) prefetch_lines(wr + ahead, k * 4, (k + 2 * L) * 4);
      const Vec w0 = Simd::load(wr + k), w1 = Simd::load(wr + k + L);
#pragma GCC unroll 8
      for (int i = 0; i < M; ++i) {
        const float* xi = b.x + i * b.x_stride + k;
        acc0[i] = Simd::fmadd(w0, Simd::load(xi), acc0[i]);
        acc1[i] = Simd::fmadd(w1, Simd::load(xi + L), acc1[i]);
      }
    }
    for (; k < K; k += L) {  // at most two vectors left, the last one partial
      const int len = static_cast<int>(K - k < L ? K - k : L);
      const Vec wv = Simd::load_partial(wr + k, len);
#pragma GCC unroll 8
      for (int i = 0; i < M; ++i) acc0[i] = Simd::fmadd(wv, Simd::load_partial(b.x + i * b.x_stride + k, len), acc0[i]);
    }
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) b.y[i * b.y_stride + n] = Simd::reduce_add(Simd::add(acc0[i], acc1[i]));
  }
}

template <typename Simd, int... Ms>
void dense_rows_dispatch(const DenseBatch& b, int64_t row0, int64_t row1, std::integer_sequence<int, Ms...>) {
  ((b.m == Ms + 1 ? dense_rows_m<Simd, Ms + 1>(b, row0, row1) : void()), ...);
}

template <typename Simd>
void dense_rows_simd(const DenseBatch& b, int64_t row0, int64_t row1) {
  dense_rows_dispatch<Simd>(b, row0, row1, std::make_integer_sequence<int, kMaxGemvRows>{});
}

}  // namespace
}  // namespace fsq::cpu
