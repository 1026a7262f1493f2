// The host side of the fp16-weight GEMV (dense_gemv.h): its argument check and its spec.
// Built with or without CUDA.
#include "common/half.h"
#include "runtime/cuda/dense_gemv.h"

namespace fsq::cuda {

std::string dense_gemv_problem(const HalfWeightsView& w, int64_t m) {
  if (w.rows < 1 || w.cols < 1) return "empty weight matrix";
  if (w.cols % 8 != 0) return "cols must be a multiple of 8";
  if (m < 1 || m > kMaxGemvBatch) return "batch must be 1..16 rows of x";
  return "";
}

void dense_matmul_f16_reference(const HalfWeightsView& w, const float* x, int64_t m, int64_t x_stride, float* y,
                                int64_t y_stride) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t n = 0; n < w.rows; ++n) {
      double sum = 0;
      for (int64_t k = 0; k < w.cols; ++k) sum += static_cast<double>(x[i * x_stride + k]) * f16_to_f32(w.data[n * w.cols + k]);
      y[i * y_stride + n] = static_cast<float>(sum);
    }
}

}  // namespace fsq::cuda
