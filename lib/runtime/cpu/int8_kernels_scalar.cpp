// The int8 kernels' spec and portable pieces: argument checks, the weight layout
// (int8_isa.h), the scalar activation quantizer that every SIMD quantizer must match bit for
// bit, the references, and the scalar fallback of the tiled GEMM.
#include <cmath>
#include <cstring>
#include <vector>

#include "runtime/cpu/int8_isa.h"
#include "runtime/cpu/int8_kernels.h"

namespace fsq::cpu {
namespace {

constexpr float kCodeMax = 127.0f;

// The clamp first (fmax drops a NaN product), then round half to even.
int8_t code_of(float v) { return static_cast<int8_t>(std::nearbyint(std::fmin(std::fmax(v, -kCodeMax), kCodeMax))); }

// acc[i, n] for one output, accumulated modulo 2^32 like the SIMD variants (exact whenever
// the true sum fits int32, i.e. cols < 2^31 / 127^2).
int32_t dot(const int8_t* a, const int8_t* b, int64_t cols) {
  uint32_t s = 0;
  for (int64_t k = 0; k < cols; ++k) s += static_cast<uint32_t>(int32_t{a[k]} * int32_t{b[k]});
  return static_cast<int32_t>(s);
}

void store(const Int8Gemm& g, int64_t i, int64_t n, int32_t acc) {
  if (g.y != nullptr)
    g.y[i * g.y_stride + n] = static_cast<float>(acc) * (g.x_scales[i] * g.w_scales[n]);
  else
    g.acc[i * g.acc_stride + n] = acc;
}

}  // namespace

int64_t int8_padded_cols(int64_t cols) { return (cols + 3) / 4 * 4; }

KernelStatus check_int8_view(const Int8WeightsView& w) {
  if (w.q == nullptr || w.scales == nullptr || w.rows <= 0 || w.cols <= 0) return KernelStatus::InvalidArgument;
  return KernelStatus::Ok;
}

int64_t int8_prepared_bytes(int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0) return 0;
  const int64_t blocks = (rows + kInt8BlockRows - 1) / kInt8BlockRows;
  return blocks * kInt8BlockRows * int8_padded_cols(cols);
}

KernelStatus int8_prepare_weights(const Int8WeightsView& w, std::byte* out, Int8PreparedView* prepared) {
  constexpr uintptr_t kAlign = 64;
  if (check_int8_view(w) != KernelStatus::Ok || out == nullptr || prepared == nullptr ||
      reinterpret_cast<uintptr_t>(out) % kAlign != 0)
    return KernelStatus::InvalidArgument;
  const int64_t quads = int8_padded_cols(w.cols) / 4;
  auto* dst = reinterpret_cast<uint8_t*>(out);
  std::memset(dst, kInt8WeightBias, static_cast<size_t>(int8_prepared_bytes(w.rows, w.cols)));  // w = 0
  for (int64_t n = 0; n < w.rows; ++n) {
    uint8_t* block = dst + n / kInt8BlockRows * quads * kInt8QuadBytes + n % kInt8BlockRows * 4;
    for (int64_t k = 0; k < w.cols; ++k)
      block[k / 4 * kInt8QuadBytes + k % 4] = static_cast<uint8_t>(w.q[n * w.cols + k] + kInt8WeightBias);
  }
  *prepared = {out, w.scales, w.rows, w.cols};
  return KernelStatus::Ok;
}

void quantize_row_int8_scalar(const float* x, int64_t cols, ActQuant mode, float static_scale, int8_t* q,
                              float* x_scale) {
  float inv = 0.0f;
  if (mode == ActQuant::PerToken) {
    float amax = 0.0f;
    for (int64_t k = 0; k < cols; ++k) amax = std::fmax(amax, std::fabs(x[k]));
    if (amax == 0.0f) {
      *x_scale = 0.0f;
      std::memset(q, 0, static_cast<size_t>(cols));
      return;
    }
    *x_scale = amax / kCodeMax;
    inv = kCodeMax / amax;
  } else {
    *x_scale = static_scale;
    inv = 1.0f / static_scale;
  }
  for (int64_t k = 0; k < cols; ++k) q[k] = code_of(x[k] * inv);
}

KernelStatus int8_linear_reference(const Int8WeightsView& w, const float* x, int64_t m, int64_t x_stride,
                                   ActQuant mode, float static_scale, float* y, int64_t y_stride) {
  if (check_int8_view(w) != KernelStatus::Ok || x == nullptr || y == nullptr || m <= 0 || x_stride < w.cols ||
      y_stride < w.rows || !static_scale_ok(mode, static_scale))
    return KernelStatus::InvalidArgument;
  std::vector<int8_t> xq(static_cast<size_t>(w.cols));
  for (int64_t i = 0; i < m; ++i) {
    float xs = 0.0f;
    quantize_row_int8_scalar(x + i * x_stride, w.cols, mode, static_scale, xq.data(), &xs);
    for (int64_t n = 0; n < w.rows; ++n)
      y[i * y_stride + n] = static_cast<float>(dot(xq.data(), w.q + n * w.cols, w.cols)) * (xs * w.scales[n]);
  }
  return KernelStatus::Ok;
}

KernelStatus int8_gemm_int32_reference(const Int8WeightsView& w, const int8_t* xq, int64_t m, int64_t xq_stride,
                                       int32_t* acc, int64_t acc_stride) {
  if (w.q == nullptr || w.rows <= 0 || w.cols <= 0 || xq == nullptr || acc == nullptr || m <= 0 ||
      xq_stride < w.cols || acc_stride < w.rows)
    return KernelStatus::InvalidArgument;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t n = 0; n < w.rows; ++n) acc[i * acc_stride + n] = dot(xq + i * xq_stride, w.q + n * w.cols, w.cols);
  return KernelStatus::Ok;
}

// Block by block, all 16 rows' sums at once: the prepared bytes are read in order.
void int8_tiles_scalar(const Int8Gemm& g, int64_t i0, int64_t i1, int64_t b0, int64_t b1) {
  const int64_t quads = g.kp / 4;
  for (int64_t b = b0; b < b1; ++b) {
    const uint8_t* block = g.w + b * quads * kInt8QuadBytes;
    for (int64_t i = i0; i < i1; ++i) {
      const int8_t* x = g.xq + i * g.xq_stride;
      uint32_t sums[kInt8BlockRows] = {};
      for (int64_t q = 0; q < quads; ++q)
        for (int64_t r = 0; r < kInt8BlockRows; ++r)
          for (int64_t j = 0; j < 4; ++j)
            sums[r] += static_cast<uint32_t>((block[q * kInt8QuadBytes + 4 * r + j] - kInt8WeightBias) * x[4 * q + j]);
      for (int64_t r = 0; r < kInt8BlockRows && b * kInt8BlockRows + r < g.rows; ++r)
        store(g, i, b * kInt8BlockRows + r, static_cast<int32_t>(sums[r]));
    }
  }
}

}  // namespace fsq::cpu
