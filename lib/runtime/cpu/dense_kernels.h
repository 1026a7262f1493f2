// CPU GEMV for dense f32 linears on the decode path (runtime/fast_decode.h): a batch of up
// to kMaxGemvRows activation rows reads each weight row once, with no packing of W (BLAS's
// GEMM copies the whole matrix into panels first, which at batch 1 costs more than the
// product: 49152 x 576 for SmolLM2's head). Raw pointers only; no LibTorch.
#pragma once

#include <cstdint>

#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/kernel_status.h"  // KernelStatus, kMaxGemvRows

namespace fsq::cpu {

// W [rows = out features N, cols = in features K], row-major with row stride >= cols.
struct DenseWeightsView {
  const float* weights = nullptr;
  int64_t rows = 0, cols = 0, row_stride = 0;
};

KernelStatus check_dense_view(const DenseWeightsView& w);

// The spec: y[i, n] = sum_k x[i, k] * w[n, k] accumulated in double, rounded to float.
KernelStatus dense_matmul_reference(const DenseWeightsView& w, const float* x, int64_t m, int64_t x_stride, float* y,
                                    int64_t y_stride);

// The same product summed in float (any m; batches of kMaxGemvRows rows share one pass
// over W). Parallel over output rows (OpenMP) when the product is large enough. Writes
// only y[i, 0..rows) for each i.
KernelStatus dense_gemv(const DenseWeightsView& w, const float* x, int64_t m, int64_t x_stride, float* y,
                        int64_t y_stride, CpuIsa isa);

}  // namespace fsq::cpu
