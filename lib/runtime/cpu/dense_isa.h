// The per-instruction-set halves of dense_gemv (dense_gemv.cpp dispatches with checked
// arguments). The SIMD versions live in files compiled with their own flags; the rules of
// uniform_isa.h apply.
#pragma once

#include <cstdint>

#include "runtime/cpu/dense_kernels.h"

namespace fsq::cpu {

// y[i, n] for i < m (m <= kMaxGemvRows) and n in [row0, row1), over the weights of `View`
// (f32, or 16-bit for dense16_gemv).
template <typename View>
struct DenseBatchOf {
  const View* w = nullptr;
  int64_t m = 0;
  const float* x = nullptr;
  int64_t x_stride = 0;
  float* y = nullptr;
  int64_t y_stride = 0;
  const float* panel = nullptr;  // unused: the dense GEMV reads x as given (gemv_batches.h)
};
using DenseBatch = DenseBatchOf<DenseWeightsView>;
using Dense16Batch = DenseBatchOf<Dense16WeightsView>;

using DenseRowsFn = void (*)(const DenseBatch& batch, int64_t row0, int64_t row1);
void dense_rows_scalar(const DenseBatch& batch, int64_t row0, int64_t row1);
void dense_rows_avx2(const DenseBatch& batch, int64_t row0, int64_t row1);
void dense_rows_avx512(const DenseBatch& batch, int64_t row0, int64_t row1);

using Dense16RowsFn = void (*)(const Dense16Batch& batch, int64_t row0, int64_t row1);
void dense16_rows_scalar(const Dense16Batch& batch, int64_t row0, int64_t row1);
void dense16_rows_avx2(const Dense16Batch& batch, int64_t row0, int64_t row1);
void dense16_rows_avx512(const Dense16Batch& batch, int64_t row0, int64_t row1);

}  // namespace fsq::cpu
