// CPU kernels for uniform-quantized linears (weights W2/3/4/8 bit-packed as in
// lib/formats/FORMAT.md, activations fp32). Raw pointers, sizes and strides only: no
// LibTorch here (DESIGN.md); QuantLinear is the bridge.
//
// Every kernel computes with the dequantized weights of formats/quant/uniform_reference.cpp,
//   w'[n, k] = (q[n, k] - z[n, g]) * scale[n, g],  g = k / group_cols,
// z = zeros[n, g] (asymmetric) or 2^(bits-1) (symmetric, zeros == nullptr).
// uniform_matmul_reference is the spec the optimized kernels are tested against.
#pragma once

#include <cstdint>

#include "runtime/cpu/cpu_isa.h"        // CpuIsa (every family)
#include "runtime/cpu/kernel_status.h"  // KernelStatus, kMaxGemvRows (every family)

namespace fsq::cpu {

// One packed weight matrix W [rows = out features N, cols = in features K].
struct UniformWeightsView {
  const uint32_t* words = nullptr;  // [rows, words_per_row], each row a little-endian bit stream
  int64_t rows = 0, cols = 0, words_per_row = 0;
  int bits = 4;                     // 2, 3, 4 or 8
  int64_t group_cols = 0;           // columns per group: 32, 64, 128, or cols (per-channel)
  const uint16_t* scales = nullptr;  // [rows, cols / group_cols], fp16 bit patterns
  const uint8_t* zeros = nullptr;    // [rows, cols / group_cols]; nullptr: symmetric
};

// Ok when the view's sizes agree with each other (words_per_row = ceil(cols * bits / 32),
// cols a multiple of group_cols, non-null words and scales).
KernelStatus check_uniform_view(const UniformWeightsView& w);
// Ok when, besides check_uniform_view, a matmul call's x [m, cols] and y [m, rows] fit w:
// m >= 0, non-null x and y when m > 0, x_stride >= cols, y_stride >= rows.
KernelStatus check_matmul_call(const UniformWeightsView& w, const float* x, int64_t m, int64_t x_stride,
                               const float* y, int64_t y_stride);

// The spec: y[i, n] = sum_k x[i, k] * w'[n, k] for i < m, n < rows, with w' dequantized in
// float32 exactly as dequantize_uniform does and the sum over k accumulated in double
// (then rounded to float). x is [m, cols] with row stride x_stride; y is [m, rows] with row
// stride y_stride. Scalar and slow on purpose.
KernelStatus uniform_matmul_reference(const UniformWeightsView& w, const float* x, int64_t m, int64_t x_stride,
                                      float* y, int64_t y_stride);

// The fast path for decode (any m is accepted; batches of up to kMaxGemvRows rows of x
// share one pass over the weights). Each weight row is unpacked once per batch and turned
// into float weights group by group: 2/3/4-bit codes through a 16-entry table of
// (q - z) * scale built once per group (AVX-512), otherwise as q * scale - z * scale in
// one FMA per vector (exactly (q - z) * scale in the scalar fallback); every row of the
// batch then multiply-accumulates the same weights,
// so zero points and scales cost nothing per activation row. Sums in float. Parallel over
// output rows (OpenMP). Writes only y[i, 0..rows) for each i.
KernelStatus uniform_gemv(const UniformWeightsView& w, const float* x, int64_t m, int64_t x_stride, float* y,
                          int64_t y_stride, CpuIsa isa);

// Dequantizes weight rows [row0, row0 + nrows) into out [nrows, cols] (row-major,
// contiguous), bit-exact with dequantize_uniform. For prefill: the caller dequantizes a
// block of rows and runs a GEMM on it.
KernelStatus uniform_dequantize_rows(const UniformWeightsView& w, int64_t row0, int64_t nrows, float* out,
                                     CpuIsa isa);

}  // namespace fsq::cpu
