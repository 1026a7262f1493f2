// CPU GEMV for dense f32, bf16 and f16 linears on the decode path (runtime/fast_decode.h): a batch of up
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

// Weights kept in the 16-bit dtype a checkpoint stores them in (bf16 or f16), read straight
// from the mapped file: a 7B bf16 model then runs in its own 13.5 GB instead of 27 GB of f32.
// Each weight is widened to f32 exactly as it is loaded, so the products and sums are those
// of the f32 kernel on the widened matrix (the same bits, batch for batch and ISA for ISA).
enum class HalfFormat { BF16, F16 };
struct Dense16WeightsView {
  const uint16_t* weights = nullptr;
  int64_t rows = 0, cols = 0, row_stride = 0;
  HalfFormat format = HalfFormat::BF16;
};

KernelStatus check_dense16_view(const Dense16WeightsView& w);

// The spec: the weights widened to f32, then dense_matmul_reference.
KernelStatus dense16_matmul_reference(const Dense16WeightsView& w, const float* x, int64_t m, int64_t x_stride,
                                      float* y, int64_t y_stride);

// As dense_gemv, reading 16-bit weights.
KernelStatus dense16_gemv(const Dense16WeightsView& w, const float* x, int64_t m, int64_t x_stride, float* y,
                          int64_t y_stride, CpuIsa isa);

// out [nrows, cols] = rows [row0, row0 + nrows) widened to f32 (exact): the blocks that
// prompts and perplexity windows multiply with the f32 GEMM.
KernelStatus widen_dense16_rows(const Dense16WeightsView& w, int64_t row0, int64_t nrows, float* out);

}  // namespace fsq::cpu
