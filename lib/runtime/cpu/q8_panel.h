// The int8 activation panel the q8 GEMVs read (uniform_q8_isa.h, Q8Activations has the layout):
// each row of x quantized per block of 32 columns (quantize_q8_row), its codes laid out per
// chunk of 64 weight bytes, the block scale of each lane, and per weight group the sum of
// d[b] * sum of codes. Shared by uniform_gemv_q8 and lut_gemv_q8 (a LUT row is one group).
// Baseline code (uniform_q8_gemv.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/cpu/uniform_kernels.h"
#include "runtime/cpu/uniform_q8_isa.h"  // Q8Activations
#include "runtime/cpu/uniform_q8_kernels.h"

namespace fsq::cpu {

// Quantizes one activation row into codes q[0, cols) and block scales d[0, q8_block_count(cols))
// (quantize_q8_row's contract); W4A4 (w4a4_kernels.h) passes its per-token 4-bit quantizer.
using Q8RowQuantizer = void (*)(const float* x, int64_t cols, int8_t* q, float* d);

struct Q8Panel {
  std::vector<int8_t> codes;
  std::vector<float> lane_scales, group_sums;
  int64_t codes_stride = 0, lane_scales_stride = 0, group_sums_stride = 0;

  // For up to m rows of x against weights of w.bits (4 or 8), w.cols and w.group_cols.
  Q8Panel(const UniformWeightsView& w, int64_t m, Q8RowQuantizer quantize = quantize_q8_row_fast);
  // Quantizes rows x[0 .. m) (row stride x_stride, m at most the constructor's) into the
  // panel's first m rows.
  void fill(const float* x, int64_t m, int64_t x_stride);
  // The filled rows as the kernels read them.
  Q8Activations activations() const {
    return {codes.data(), codes_stride, lane_scales.data(), lane_scales_stride, group_sums.data(), group_sums_stride};
  }

 private:
  void fill_row(int64_t i, const float* x);

  UniformWeightsView w_;
  Q8RowQuantizer quantize_;
  std::vector<int8_t> q_;  // one row's codes and block scales (quantize_q8_row)
  std::vector<float> d_;
};

// uniform_gemv_q8_together with the activation rows quantized by `quantize` (the same
// checks, panel and parallel split).
KernelStatus q8_gemv_together_with(const Q8GemvOutput* outputs, int count, const float* x, int64_t m,
                                   int64_t x_stride, CpuIsa isa, Q8RowQuantizer quantize);

// uniform_gemv_q8_reference with the activation rows quantized by `quantize`: the scalar
// spec (integer dots per block of 32 columns, scaled in double) of every such kernel.
KernelStatus uniform_gemv_reference_with(const UniformWeightsView& w, const float* x, int64_t m, int64_t x_stride,
                                         float* y, int64_t y_stride, Q8RowQuantizer quantize);

}  // namespace fsq::cpu
