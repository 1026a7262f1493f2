// dense_gemv's and dense16_gemv's entry points (checks, ISA dispatch, the OpenMP split over
// output rows), their scalar rows and the double-precision reference.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/half.h"

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

Dense16RowsFn dense16_rows_for(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Avx512: return dense16_rows_avx512;
    case CpuIsa::Avx2: return dense16_rows_avx2;
    case CpuIsa::Scalar: break;
  }
  return dense16_rows_scalar;
}

KernelStatus check_view(const DenseWeightsView& w) { return check_dense_view(w); }
KernelStatus check_view(const Dense16WeightsView& w) { return check_dense16_view(w); }

template <typename View>
bool valid_call(const View& w, const float* x, int64_t m, int64_t x_stride, const float* y, int64_t y_stride) {
  return check_view(w) == KernelStatus::Ok && m >= 0 && (m == 0 || (x != nullptr && y != nullptr)) &&
         x_stride >= w.cols && y_stride >= w.rows;
}

// One stored 16-bit weight as f32 (exact).
struct Widen16 {
  HalfFormat format;
  float operator()(uint16_t h) const { return format == HalfFormat::BF16 ? bf16_to_f32(h) : f16_to_f32(h); }
};

// The scalar rows of either weight dtype: one float sum per output, in column order.
template <typename Batch, typename WidenFn>
void scalar_rows(const Batch& b, int64_t row0, int64_t row1, const WidenFn& to_f32) {
  const auto& w = *b.w;
  for (int64_t n = row0; n < row1; ++n) {
    const auto* wr = w.weights + n * w.row_stride;
    for (int64_t i = 0; i < b.m; ++i) {
      const float* xi = b.x + i * b.x_stride;
      float acc = 0.0f;
      for (int64_t k = 0; k < w.cols; ++k) acc += xi[k] * to_f32(wr[k]);
      b.y[i * b.y_stride + n] = acc;
    }
  }
}

// The batches of x, each split over threads by output rows.
template <typename Batch, typename View, typename RowsFn>
void run_gemv(const View& w, const float* x, int64_t m, int64_t x_stride, float* y, int64_t y_stride, RowsFn rows_fn) {
  for_each_gemv_batch<Batch>(
      w, x, m, x_stride, y, y_stride, /*lanes=*/0, /*panel_size=*/0, [](const float*, int64_t, float*) {},
      [&](const Batch& batch) {
        for_each_thread_rows(w.rows, w.rows * w.cols * batch.m >= kGemvParallelMinWork,
                             [&](int64_t row0, int64_t row1) { rows_fn(batch, row0, row1); });
      });
}

}  // namespace

KernelStatus check_dense_view(const DenseWeightsView& w) {
  if (w.weights == nullptr || w.rows <= 0 || w.cols <= 0 || w.row_stride < w.cols) return KernelStatus::InvalidArgument;
  return KernelStatus::Ok;
}

KernelStatus check_dense16_view(const Dense16WeightsView& w) {
  if (w.weights == nullptr || w.rows <= 0 || w.cols <= 0 || w.row_stride < w.cols) return KernelStatus::InvalidArgument;
  if (w.format != HalfFormat::BF16 && w.format != HalfFormat::F16) return KernelStatus::InvalidArgument;
  return KernelStatus::Ok;
}

void dense_rows_scalar(const DenseBatch& b, int64_t row0, int64_t row1) {
  scalar_rows(b, row0, row1, [](float v) { return v; });
}

void dense16_rows_scalar(const Dense16Batch& b, int64_t row0, int64_t row1) {
  scalar_rows(b, row0, row1, Widen16{b.w->format});
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
  run_gemv<DenseBatch>(w, x, m, x_stride, y, y_stride, dense_rows_for(isa));
  return KernelStatus::Ok;
}

KernelStatus widen_dense16_rows(const Dense16WeightsView& w, int64_t row0, int64_t nrows, float* out) {
  if (check_dense16_view(w) != KernelStatus::Ok || out == nullptr || row0 < 0 || nrows < 0 || row0 + nrows > w.rows)
    return KernelStatus::InvalidArgument;
  const Widen16 to_f32{w.format};
  // Parallel: a prompt's GEMM waits for each block, and widening is a stream through memory.
#pragma omp parallel for schedule(static) if (nrows * w.cols >= kGemvParallelMinWork)
  for (int64_t r = 0; r < nrows; ++r) {
    const uint16_t* src = w.weights + (row0 + r) * w.row_stride;
    float* dst = out + r * w.cols;
    for (int64_t k = 0; k < w.cols; ++k) dst[k] = to_f32(src[k]);
  }
  return KernelStatus::Ok;
}

KernelStatus dense16_matmul_reference(const Dense16WeightsView& w, const float* x, int64_t m, int64_t x_stride,
                                      float* y, int64_t y_stride) {
  if (!valid_call(w, x, m, x_stride, y, y_stride)) return KernelStatus::InvalidArgument;
  std::vector<float> wide(static_cast<size_t>(w.rows * w.cols));
  widen_dense16_rows(w, 0, w.rows, wide.data());
  return dense_matmul_reference({wide.data(), w.rows, w.cols, w.cols}, x, m, x_stride, y, y_stride);
}

KernelStatus dense16_gemv(const Dense16WeightsView& w, const float* x, int64_t m, int64_t x_stride, float* y,
                          int64_t y_stride, CpuIsa isa) {
  if (!valid_call(w, x, m, x_stride, y, y_stride)) return KernelStatus::InvalidArgument;
  if (!cpu_supports(isa)) return KernelStatus::IsaUnavailable;
  run_gemv<Dense16Batch>(w, x, m, x_stride, y, y_stride, dense16_rows_for(isa));
  return KernelStatus::Ok;
}

}  // namespace fsq::cpu
