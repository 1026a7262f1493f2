// The fp16-weight GEMV (dense_gemv.h): a warp per output row, lanes over 8-value chunks of the
// row (one 16-byte load each), every row of the batch against the same loaded weights.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "runtime/cuda/dense_gemv.h"
#include "runtime/cuda/gemv_common.cuh"

namespace fsq::cuda {
namespace {

using detail::ActTraits;

constexpr int kWarpsPerBlock = 4;

template <class Act, int M>
__global__ void dense_gemv_kernel(const __half* __restrict__ w, int64_t rows, int64_t cols, const Act* __restrict__ x,
                                  int64_t x_stride, Act* __restrict__ y, int64_t y_stride, int mvalid) {
  const int64_t row = blockIdx.x * static_cast<int64_t>(kWarpsPerBlock) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const __half* wr = w + row * cols;
  float acc[M];
#pragma unroll
  for (int i = 0; i < M; ++i) acc[i] = 0.f;
  for (int64_t c = lane * 8; c < cols; c += 32 * 8) {
    float wf[8];
    detail::ActTraits<__half>::to_float8(__ldg(reinterpret_cast<const uint4*>(wr + c)), wf);
#pragma unroll
    for (int i = 0; i < M; ++i) {
      if (i >= mvalid) break;
      float xf[8];
      detail::load_x8(x + i * x_stride, c, xf);
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[i] = fmaf(wf[j], xf[j], acc[i]);
    }
  }
#pragma unroll
  for (int i = 0; i < M; ++i) {
    if (i >= mvalid) break;
    const float sum = detail::warp_sum(acc[i]);
    if (lane == 0) y[i * y_stride + row] = ActTraits<Act>::from_float(sum);
  }
}

template <class Act>
std::string launch(const HalfWeightsView& w, const Act* x, int64_t m, int64_t x_stride, Act* y, int64_t y_stride,
                   cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((w.rows + kWarpsPerBlock - 1) / kWarpsPerBlock));
  const auto* wh = reinterpret_cast<const __half*>(w.data);
  // Passes of 8 rows, then the smallest tier that holds the rest.
  const std::string e = detail::for_each_batch_tier(m, [&](auto tier, int64_t i0, int valid) {
    dense_gemv_kernel<Act, decltype(tier)::value><<<grid, kWarpsPerBlock * 32, 0, stream>>>(
        wh, w.rows, w.cols, x + i0 * x_stride, x_stride, y + i0 * y_stride, y_stride, valid);
  });
  return e.empty() ? e : "dense_gemv_f16: " + e;
}

}  // namespace

std::string dense_gemv_f16(const HalfWeightsView& w, const void* x, int64_t m, int64_t x_stride, void* y,
                           int64_t y_stride, ActType act, void* stream) {
  if (std::string why = dense_gemv_problem(w, m); !why.empty()) return "dense_gemv_f16: " + why;
  if (x == nullptr || y == nullptr || w.data == nullptr) return "dense_gemv_f16: null pointer";
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0 || x_stride % 8 != 0 || reinterpret_cast<uintptr_t>(w.data) % 16 != 0)
    return "dense_gemv_f16: x and the weights must be 16-byte aligned, x_stride a multiple of 8";
  if (x_stride < w.cols || y_stride < w.rows) return "dense_gemv_f16: x or y row stride shorter than its row";
  auto s = static_cast<cudaStream_t>(stream);
  if (act == ActType::F16)
    return launch(w, static_cast<const __half*>(x), m, x_stride, static_cast<__half*>(y), y_stride, s);
  return launch(w, static_cast<const __nv_bfloat16*>(x), m, x_stride, static_cast<__nv_bfloat16*>(y), y_stride, s);
}

}  // namespace fsq::cuda
