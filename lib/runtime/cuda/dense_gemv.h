// The CUDA backend's fp16-weight GEMV (decode, batch 1..16): the baseline the packed types are
// measured against, and what a dense model's linears, embedding and head run on in the decoder
// (its f32 weights rounded to fp16 once, at upload). No CUDA types here.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/cuda/quant_gemv.h"  // ActType, kMaxGemvBatch

namespace fsq::cuda {

// W [rows, cols] of fp16 bit patterns, row-major (device or host memory as the call says).
struct HalfWeightsView {
  const uint16_t* data = nullptr;
  int64_t rows = 0, cols = 0;
};

// Why dense_gemv_f16 cannot take `w` at batch m ("" when it can): cols not a multiple of 8
// (16-byte loads), a batch outside 1..kMaxGemvBatch, empty sizes.
std::string dense_gemv_problem(const HalfWeightsView& w, int64_t m);

// y [m, w.rows] = x [m, w.cols] times w^T, device pointers, x and y act values; x 16-byte
// aligned with x_stride a multiple of 8, w.data 16-byte aligned. Sums in f32 in a fixed order.
// Launches on `stream` without waiting: "" or the reason nothing was launched.
std::string dense_gemv_f16(const HalfWeightsView& w, const void* x, int64_t m, int64_t x_stride, void* y,
                           int64_t y_stride, ActType act, void* stream = nullptr);

// The spec on host memory: y[i, n] = sum_k x[i, k] * w[n, k] in double, rounded to float.
void dense_matmul_f16_reference(const HalfWeightsView& w, const float* x, int64_t m, int64_t x_stride, float* y,
                                int64_t y_stride);

}  // namespace fsq::cuda
