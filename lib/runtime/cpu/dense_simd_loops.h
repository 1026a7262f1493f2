// The dense GEMV loop shared by dense_kernels_avx2.cpp and dense_kernels_avx512.cpp, over
// a Simd struct (load, load_partial, fmadd, add, reduce_add, zero, kLanes) and a weight
// reader (f32, or bf16/f16 widened in registers). Each weight
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

// How the loop reads a weight vector: f32 as stored. The 16-bit readers (the per-ISA files)
// have the same members and widen in registers.
template <typename Simd>
struct F32WeightLoads {
  using Elem = float;
  static typename Simd::Vec load(const float* p) { return Simd::load(p); }
  static typename Simd::Vec load_partial(const float* p, int n) { return Simd::load_partial(p, n); }
};

template <typename Simd, typename Loads, int M, typename Batch>
void dense_rows_m(const Batch& b, int64_t row0, int64_t row1) {
  using Vec = typename Simd::Vec;
  using Elem = typename Loads::Elem;
  constexpr int64_t L = Simd::kLanes;
  const auto& w = *b.w;
  const int64_t K = w.cols, pairs_end = K / (2 * L) * (2 * L);
  const Elem* end = w.weights + (w.rows - 1) * w.row_stride + K;
  // The same distance in bytes for every weight dtype: it is DRAM's latency the prefetch hides.
  constexpr int64_t ahead = dense_prefetch_bytes(M) / static_cast<int64_t>(sizeof(Elem));
  for (int64_t n = row0; n < row1; ++n) {
    const Elem* wr = w.weights + n * w.row_stride;
    const bool prefetch = wr + K + ahead <= end;
    Vec acc0[M], acc1[M];
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) acc0[i] = acc1[i] = Simd::zero();
    int64_t k = 0;
    for (; k < pairs_end; k += 2 * L) {
      if (prefetch) prefetch_lines(wr + ahead, k * int64_t{sizeof(Elem)}, (k + 2 * L) * int64_t{sizeof(Elem)});
      const Vec w0 = Loads::load(wr + k), w1 = Loads::load(wr + k + L);
#pragma GCC unroll 8
      for (int i = 0; i < M; ++i) {
        const float* xi = b.x + i * b.x_stride + k;
        acc0[i] = Simd::fmadd(w0, Simd::load(xi), acc0[i]);
        acc1[i] = Simd::fmadd(w1, Simd::load(xi + L), acc1[i]);
      }
    }
    for (; k < K; k += L) {  // at most two vectors left, the last one partial
      const int len = static_cast<int>(K - k < L ? K - k : L);
      const Vec wv = Loads::load_partial(wr + k, len);
#pragma GCC unroll 8
      for (int i = 0; i < M; ++i) acc0[i] = Simd::fmadd(wv, Simd::load_partial(b.x + i * b.x_stride + k, len), acc0[i]);
    }
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) b.y[i * b.y_stride + n] = Simd::reduce_add(Simd::add(acc0[i], acc1[i]));
  }
}

template <typename Simd, typename Loads, typename Batch, int... Ms>
void dense_rows_dispatch(const Batch& b, int64_t row0, int64_t row1, std::integer_sequence<int, Ms...>) {
  ((b.m == Ms + 1 ? dense_rows_m<Simd, Loads, Ms + 1>(b, row0, row1) : void()), ...);
}

template <typename Simd, typename Loads = F32WeightLoads<Simd>, typename Batch>
void dense_rows_simd(const Batch& b, int64_t row0, int64_t row1) {
  dense_rows_dispatch<Simd, Loads>(b, row0, row1, std::make_integer_sequence<int, kMaxGemvRows>{});
}

}  // namespace
}  // namespace fsq::cpu
