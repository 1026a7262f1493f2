// dense_gemv's entry point (checks, ISA dispatch, the OpenMP split over output rows), its
// scalar rows and the double-precision reference.
#include <algorithm>
#include <cstdint>

#include "runtime/cpu/dense_isa.h"
#include "runtime/cpu/gemv_batches.h"
#include "runtime/cpu/dense_kernels.h"

namespace fsq::cpu {
namespace {

DenseRowsFn dense_rows_for(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Avx512: return dense_rows_avx512;
    case CpuIsa::Avx2: return dense_rows_avx2;
    case CpuIsa::Scalar: break;
  }
  return dense_rows_scalar;
}

bool valid_call(const DenseWeightsView& w, const float* x, int64_t m, int64_t x_stride, const float* y,
                int64_t y_stride) {
  return check_dense_view(w) == KernelStatus::Ok && m >= 0 && (m == 0 || (x != nullptr && y != nullptr)) &&
         x_stride >= w.cols && y_stride >= w.rows;
}

}  // namespace

KernelStatus check_dense_view(const DenseWeightsView& w) {
  if (w.weights == nullptr || w.rows <= 0 || w.cols <= 0 || w.row_stride < w.cols) return KernelStatus::InvalidArgument;
  return KernelStatus::Ok;
}

void dense_rows_scalar(const DenseBatch& b, int64_t row0, int64_t row1) {
  const DenseWeightsView& w = *b.w;
  for (int64_t n = row0; n < row1; ++n) {
    const float* wr = w.weights + n * w.row_stride;
    for (int64_t i = 0; i < b.m; ++i) {
      const float* xi = b.x + i * b.x_stride;
      float acc = 0.0f;
      for (int64_t k = 0; k < w.cols; ++k) acc += xi[k] * wr[k];
      b.y[i * b.y_stride + n] = acc;
    }
  }
}

KernelStatus dense_matmul_reference(const DenseWeightsView& w, const float* x, int64_t m, int64_t x_stride, float* y,
                                    int64_t y_stride) {
  if (!valid_call(w, x, m, x_stride, y, y_stride)) return KernelStatus::InvalidArgument;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t n = 0; n < w.rows; ++n) {
      double sum = 0.0;
      for (int64_t k = 0; k < w.cols; ++k)
        sum += static_cast<double>(x[i * x_stride + k]) * static_cast<double>(w.weights[n * w.row_stride + k]);
      y[i * y_stride + n] = static_cast<float>(sum);
    }
  return KernelStatus::Ok;
}

KernelStatus dense_gemv(const DenseWeightsView& w, const float* x, int64_t m, int64_t x_stride, float* y,
                        int64_t y_stride, CpuIsa isa) {
  if (!valid_call(w, x, m, x_stride, y, y_stride)) return KernelStatus::InvalidArgument;
  if (!cpu_supports(isa)) return KernelStatus::IsaUnavailable;
  const DenseRowsFn rows_fn = dense_rows_for(isa);
  for_each_gemv_batch<DenseBatch>(
      w, x, m, x_stride, y, y_stride, /*lanes=*/0, /*panel_size=*/0, [](const float*, int64_t, float*) {},
      [&](const DenseBatch& batch) {
        for_each_thread_rows(w.rows, w.rows * w.cols * batch.m >= kGemvParallelMinWork,
                             [&](int64_t row0, int64_t row1) { rows_fn(batch, row0, row1); });
      });
  return KernelStatus::Ok;
}

}  // namespace fsq::cpu
