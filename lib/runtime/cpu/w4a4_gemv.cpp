// uniform_gemv_a4: the per-token 4-bit activation quantizer, the scalar spec, and dispatch
// onto the q8 GEMV loops (baseline code: the SIMD halves are uniform_q8_*.cpp's).
#include <algorithm>
#include <cmath>
#include <vector>

#include "common/half.h"
#include "runtime/cpu/packed_code.h"
#include "runtime/cpu/q8_panel.h"
#include "runtime/cpu/w4a4_kernels.h"

namespace fsq::cpu {

void quantize_a4_row(const float* x, int64_t cols, int8_t* q, float* d) {
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: round to nearest even, as quantize_q8_row
  float top = 0.0f, poison = 0.0f;
  for (int64_t k = 0; k < cols; ++k) {
    top = std::max(top, std::fabs(x[k]));
    poison += x[k] * 0.0f;
  }
  const float scale = poison == 0.0f ? top / static_cast<float>(kA4MaxCode) : NAN;
  constexpr float kMax = static_cast<float>(kA4MaxCode);
  for (int64_t k = 0; k < cols; ++k) {
    const float v = ((scale > 0.0f ? x[k] / scale : 0.0f) + kRound) - kRound;
    q[k] = static_cast<int8_t>(std::clamp(v, -kMax, kMax));
  }
  for (int64_t b = 0; b < q8_block_count(cols); ++b) d[b] = scale;
}

KernelStatus uniform_gemv_a4_reference(const UniformWeightsView& w, const float* x, int64_t m, int64_t x_stride,
                                       float* y, int64_t y_stride) {
  if (check_matmul_call(w, x, m, x_stride, y, y_stride) != KernelStatus::Ok) return KernelStatus::InvalidArgument;
  const int64_t groups = w.cols / w.group_cols;
  std::vector<int8_t> q(static_cast<size_t>(w.cols));
  std::vector<float> d(static_cast<size_t>(q8_block_count(w.cols)));
  for (int64_t i = 0; i < m; ++i) {
    quantize_a4_row(x + i * x_stride, w.cols, q.data(), d.data());
    const double s = d.empty() ? 0.0 : static_cast<double>(d[0]);
    for (int64_t n = 0; n < w.rows; ++n) {
      const uint32_t* row = w.words + n * w.words_per_row;
      double sum = 0.0;
      for (int64_t g = 0; g < groups; ++g) {
        const int zero = zero_point(w, n, g);
        int64_t dot = 0;
        for (int64_t k = g * w.group_cols; k < (g + 1) * w.group_cols; ++k)
          dot += (static_cast<int64_t>(packed_code(row, k, w.bits)) - zero) * q[static_cast<size_t>(k)];
        sum += static_cast<double>(f16_to_f32(w.scales[n * groups + g])) * static_cast<double>(dot);
      }
      y[i * y_stride + n] = static_cast<float>(s * sum);
    }
  }
  return KernelStatus::Ok;
}

bool uniform_a4_supported(const UniformWeightsView& w, CpuIsa isa) {
  if (isa == CpuIsa::Scalar) return check_uniform_view(w) == KernelStatus::Ok;
  return uniform_q8_supported(w, isa);
}

KernelStatus uniform_gemv_a4(const UniformWeightsView& w, const float* x, int64_t m, int64_t x_stride, float* y,
                             int64_t y_stride, CpuIsa isa) {
  if (isa == CpuIsa::Scalar) return uniform_gemv_a4_reference(w, x, m, x_stride, y, y_stride);
  const Q8GemvOutput output{&w, y, y_stride};
  return uniform_gemv_a4_together(&output, 1, x, m, x_stride, isa);
}

KernelStatus uniform_gemv_a4_together(const Q8GemvOutput* outputs, int count, const float* x, int64_t m,
                                      int64_t x_stride, CpuIsa isa) {
  return q8_gemv_together_with(outputs, count, x, m, x_stride, isa, quantize_a4_row);
}

}  // namespace fsq::cpu
