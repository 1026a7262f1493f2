// The int8 activation panel the q8 GEMVs read (uniform_q8_isa.h, Q8Batch has the layout):
// each row of x quantized per block of 32 columns (quantize_q8_row), its codes laid out per
// chunk of 64 weight bytes, the block scale of each lane, and per weight group the sum of
// d[b] * sum of codes. Shared by uniform_gemv_q8 and lut_gemv_q8 (a LUT row is one group).
// Baseline code (uniform_q8_gemv.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/cpu/uniform_kernels.h"

namespace fsq::cpu {

struct Q8Panel {
  std::vector<int8_t> codes;
  std::vector<float> lane_scales, group_sums;
  int64_t codes_stride = 0, lane_scales_stride = 0, group_sums_stride = 0;

  // For m rows of x against weights of w.bits (4 or 8), w.cols and w.group_cols.
  Q8Panel(const UniformWeightsView& w, int64_t m);
  // Quantizes row i of the batch, x[0, w.cols), into the panel; q and d are scratch of
  // w.cols codes and ceil(w.cols / 32) scales.
  void fill_row(const UniformWeightsView& w, int64_t i, const float* x, std::vector<int8_t>& q, std::vector<float>& d);
};

}  // namespace fsq::cpu
