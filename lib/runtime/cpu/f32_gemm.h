// Row-major f32 GEMMs for prompts and perplexity windows, through oneDNN's sgemm (Debian's
// libdnnl, which LibTorch links too). oneDNN picks its kernels (AVX-512 where the CPU has
// it) at run time by itself; LibTorch's at::mm goes to OpenBLAS, whose kernels follow
// OPENBLAS_CORETYPE: on this project's machines that is set to Haswell (AVX2), and oneDNN's
// sgemm ran SmolLM2's prefill shapes (M = 512) 1.6-2.5x faster on one core. OpenMP threads
// as set by set_threads().
#pragma once

#include <cstdint>

#include "runtime/cpu/kernel_status.h"

namespace fsq::cpu {

// y[i, n] = sum_k x[i, k] * w[n, k] for i < m, n < rows, k < cols (y = x w^T; w row-major
// [rows, cols], as a linear's weight). Strides in elements. InvalidArgument on null pointers,
// non-positive sizes or strides shorter than a row.
KernelStatus f32_gemm_xwt(const float* x, int64_t m, int64_t cols, int64_t x_stride, const float* w, int64_t rows,
                          int64_t w_stride, float* y, int64_t y_stride);

// y[i, n] = sum_k a[i, k] * b[k, n] (y = a b; a [m, inner], b [inner, n] row-major).
KernelStatus f32_gemm_ab(const float* a, int64_t m, int64_t inner, int64_t a_stride, const float* b, int64_t n,
                         int64_t b_stride, float* y, int64_t y_stride);

}  // namespace fsq::cpu
