// The AVX-512 and AVX2 halves of lut_gemv_q8 (lut_q8_kernels.h), called by its dispatcher
// (lut_q8_gemv.cpp) with arguments it has already checked. Follow uniform_isa.h's rules.
#pragma once

#include <cstdint>

#include "runtime/cpu/lut_q8_kernels.h"
#include "runtime/cpu/uniform_q8_isa.h"  // Q8Activations

namespace fsq::cpu {

// One batch of at most kMaxGemvRows activation rows, in the q8 panel of q8_panel.h (a LUT
// row is one group: q8.group_sums[i * stride] = sum_b d[b] * sum of the row's block codes).
struct LutQ8Batch {
  const LutWeightsView* w = nullptr;
  const LutQ8Tables* t = nullptr;
  int64_t m = 0;
  Q8Activations q8;
  const float* x = nullptr;  // the batch's rows of x as given: the CSR part reads them
  int64_t x_stride = 0;
  float* y = nullptr;  // [m, rows], row stride y_stride
  int64_t y_stride = 0;
  // With t->sparse_rows: scratch [m, rows] where the CSR stream sums each row's part.
  float* sparse_sums = nullptr;
};

// Compute y[i, n] for every i < batch.m and n in [row0, row1).
void lut_q8_rows_avx512vnni(const LutQ8Batch& batch, int64_t row0, int64_t row1);  // 4-bit codes
void lut_q8_rows_avx512vbmi(const LutQ8Batch& batch, int64_t row0, int64_t row1);  // 3-bit codes (VNNI + VBMI)
void lut_q8_rows_avx2(const LutQ8Batch& batch, int64_t row0, int64_t row1);        // 4-bit codes, AVX2 alone

}  // namespace fsq::cpu
