// Scalar W8A8 kernels: the reference (the spec of int8_kernels.h) and a plain fallback.
// Interim version: the SIMD variants replace int8_linear's body when they land.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "runtime/cpu/int8_kernels.h"

namespace fsq::cpu {
namespace {

constexpr float kInt8Max = 127.0f;

bool strides_ok(int64_t m, int64_t cols, int64_t stride) { return m > 0 && cols > 0 && stride >= cols; }

}  // namespace

KernelStatus check_int8_view(const Int8WeightsView& w) {
  if (w.q == nullptr || w.scales == nullptr || w.rows <= 0 || w.cols <= 0) return KernelStatus::InvalidArgument;
  return KernelStatus::Ok;
}

int64_t int8_prepared_bytes(int64_t rows, int64_t cols) { return rows * cols; }

KernelStatus int8_prepare_weights(const Int8WeightsView& w, std::byte* out, Int8PreparedView* prepared) {
  if (check_int8_view(w) != KernelStatus::Ok || out == nullptr || prepared == nullptr)
    return KernelStatus::InvalidArgument;
  std::memcpy(out, w.q, static_cast<size_t>(w.rows * w.cols));
  *prepared = {out, w.scales, w.rows, w.cols};
  return KernelStatus::Ok;
}

KernelStatus quantize_activations_int8(const float* x, int64_t m, int64_t cols, int64_t x_stride, ActQuant mode,
                                       float static_scale, int8_t* q, int64_t q_stride, float* x_scales, CpuIsa) {
  if (x == nullptr || q == nullptr || x_scales == nullptr || !strides_ok(m, cols, x_stride) || q_stride < cols)
    return KernelStatus::InvalidArgument;
  if (mode == ActQuant::PerTensor && !(std::isfinite(static_scale) && static_scale > 0))
    return KernelStatus::InvalidArgument;
  for (int64_t i = 0; i < m; ++i) {
    const float* row = x + i * x_stride;
    float scale = static_scale, inv = 0;
    if (mode == ActQuant::PerToken) {
      float amax = 0;
      for (int64_t k = 0; k < cols; ++k) amax = std::max(amax, std::fabs(row[k]));
      scale = amax / kInt8Max;
      inv = amax > 0 ? kInt8Max / amax : 0.0f;
    } else {
      inv = 1.0f / static_scale;
    }
    x_scales[i] = scale;
    for (int64_t k = 0; k < cols; ++k)
      q[i * q_stride + k] = static_cast<int8_t>(std::clamp(std::nearbyint(row[k] * inv), -kInt8Max, kInt8Max));
  }
  return KernelStatus::Ok;
}

KernelStatus int8_gemm_int32_reference(const Int8WeightsView& w, const int8_t* xq, int64_t m, int64_t xq_stride,
                                       int32_t* acc, int64_t acc_stride) {
  if (check_int8_view(w) != KernelStatus::Ok || xq == nullptr || acc == nullptr || !strides_ok(m, w.cols, xq_stride) ||
      acc_stride < w.rows)
    return KernelStatus::InvalidArgument;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t n = 0; n < w.rows; ++n) {
      int32_t sum = 0;
      for (int64_t k = 0; k < w.cols; ++k) sum += int32_t{xq[i * xq_stride + k]} * int32_t{w.q[n * w.cols + k]};
      acc[i * acc_stride + n] = sum;
    }
  return KernelStatus::Ok;
}

KernelStatus int8_linear_reference(const Int8WeightsView& w, const float* x, int64_t m, int64_t x_stride,
                                   ActQuant mode, float static_scale, float* y, int64_t y_stride) {
  if (check_int8_view(w) != KernelStatus::Ok || x == nullptr || y == nullptr || !strides_ok(m, w.cols, x_stride) ||
      y_stride < w.rows)
    return KernelStatus::InvalidArgument;
  std::vector<int8_t> xq(static_cast<size_t>(m * w.cols));
  std::vector<float> xs(static_cast<size_t>(m));
  std::vector<int32_t> acc(static_cast<size_t>(m * w.rows));
  KernelStatus s = quantize_activations_int8(x, m, w.cols, x_stride, mode, static_scale, xq.data(), w.cols, xs.data(),
                                             CpuIsa::Scalar);
  if (s != KernelStatus::Ok) return s;
  s = int8_gemm_int32_reference(w, xq.data(), m, w.cols, acc.data(), w.rows);
  if (s != KernelStatus::Ok) return s;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t n = 0; n < w.rows; ++n)
      y[i * y_stride + n] = static_cast<float>(acc[static_cast<size_t>(i * w.rows + n)]) * (xs[i] * w.scales[n]);
  return KernelStatus::Ok;
}

KernelStatus int8_gemm_int32(const Int8PreparedView& w, const int8_t* xq, int64_t m, int64_t xq_stride, int32_t* acc,
                             int64_t acc_stride, CpuIsa isa) {
  if (!cpu_supports(isa)) return KernelStatus::IsaUnavailable;
  const Int8WeightsView plain{reinterpret_cast<const int8_t*>(w.data), w.scales, w.rows, w.cols};
  return int8_gemm_int32_reference(plain, xq, m, xq_stride, acc, acc_stride);
}

KernelStatus int8_linear(const Int8PreparedView& w, const float* x, int64_t m, int64_t x_stride, ActQuant mode,
                         float static_scale, float* y, int64_t y_stride, CpuIsa isa) {
  if (!cpu_supports(isa)) return KernelStatus::IsaUnavailable;
  const Int8WeightsView plain{reinterpret_cast<const int8_t*>(w.data), w.scales, w.rows, w.cols};
  return int8_linear_reference(plain, x, m, x_stride, mode, static_scale, y, y_stride);
}

bool cpu_has_avx512_vnni() { return __builtin_cpu_supports("avx512vnni"); }

}  // namespace fsq::cpu
