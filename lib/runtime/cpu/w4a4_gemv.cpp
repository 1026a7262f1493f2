// uniform_gemv_a4: the per-token 4-bit activation quantizer, the scalar spec, and dispatch
// onto the q8 GEMV loops (baseline code: the SIMD halves are uniform_q8_*.cpp's).
#include <algorithm>
#include <cmath>

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

// One scale per row (every block's d is the row's), so this is the q8 spec on its codes.
KernelStatus uniform_gemv_a4_reference(const UniformWeightsView& w, const float* x, int64_t m, int64_t x_stride,
                                       float* y, int64_t y_stride) {
  return uniform_gemv_reference_with(w, x, m, x_stride, y, y_stride, quantize_a4_row);
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
