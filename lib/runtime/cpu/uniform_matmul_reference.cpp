// The scalar spec of the uniform matmul: each weight read with FORMAT.md's formula,
// dequantized in float32 exactly as dequantize_uniform does, products summed in double.
#include "common/half.h"
#include "runtime/cpu/packed_code.h"
#include "runtime/cpu/uniform_kernels.h"

namespace fsq::cpu {

KernelStatus uniform_matmul_reference(const UniformWeightsView& w, const float* x, int64_t m, int64_t x_stride,
                                      float* y, int64_t y_stride) {
  if (check_matmul_call(w, x, m, x_stride, y, y_stride) != KernelStatus::Ok) return KernelStatus::InvalidArgument;
  const int64_t groups = w.cols / w.group_cols;
  for (int64_t n = 0; n < w.rows; ++n) {
    const uint32_t* row = w.words + n * w.words_per_row;
    for (int64_t i = 0; i < m; ++i) {
      double sum = 0.0;
      for (int64_t k = 0; k < w.cols; ++k) {
        const int64_t g = k / w.group_cols;
        const float scale = f16_to_f32(w.scales[n * groups + g]);
        const int q = static_cast<int>(packed_code(row, k, w.bits));
        const float weight = static_cast<float>(q - zero_point(w, n, g)) * scale;
        sum += static_cast<double>(x[i * x_stride + k]) * static_cast<double>(weight);
      }
      y[i * y_stride + n] = static_cast<float>(sum);
    }
  }
  return KernelStatus::Ok;
}

}  // namespace fsq::cpu
