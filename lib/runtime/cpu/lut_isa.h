// The per-instruction-set halves of the LUT kernels, called by the dispatcher (lut_gemv.cpp)
// with arguments it has already checked. The AVX2 and AVX-512 files are compiled with their
// own -m flags and follow the rules of uniform_isa.h (no inline functions or templates shared
// with baseline code).
#pragma once

#include <cstdint>

#include "runtime/cpu/lut_kernels.h"

namespace fsq::cpu {

// One batch of at most kMaxGemvRows activation rows against all weight rows.
struct LutGemvBatch {
  const LutWeightsView* w = nullptr;
  int64_t m = 0;
  const float* x = nullptr;  // [m, cols], row stride x_stride: the scalar GEMV and the CSR part read it
  int64_t x_stride = 0;
  const float* panel = nullptr;  // x as the SIMD GEMVs read the dense part (lut_panel_index)
  float* y = nullptr;            // [m, rows], row stride y_stride
  int64_t y_stride = 0;
};

// The SIMD GEMVs decode a row in blocks of 8 * lanes codes, 8 vectors per block, then the
// columns past the last whole block in order, lanes at a time. They read x as a panel of
// vectors of `lanes` floats: vector v of activation row i is at panel + (v * m + i) * lanes.
// Within whole block b (columns b * 8L .. b * 8L + 8L - 1, L = lanes), vector 8b + s holds
// in lane j column
//   4-bit: b * 8L + 8j + s  (lane j's 32-bit word holds 8 codes; vector s shifts it by 4s)
//   3-bit: b * 8L + s * L + j  (column order)
// With 16 lanes and 4-bit codes, when at least 64 columns follow the whole blocks, the next
// 4 vectors are a half block (32 bytes, 8 words of 8 codes, each word in lanes j and j + 8):
// vector 8b + s, s < 4, holds in lane j column b * 128 + 8 (j mod 8) + 2s + j / 8.
// Past those, vector v holds columns in order, zero past cols.
inline constexpr int64_t kLutAvx2Lanes = 8;
inline constexpr int64_t kLutAvx512Lanes = 16;
inline int64_t lut_panel_vectors(int64_t cols, int64_t lanes) { return (cols + lanes - 1) / lanes; }
// Whether the 4 vectors after the whole blocks are a half block (see above).
inline bool lut_half_block(int bits, int64_t lanes, int64_t cols) {
  return bits == 4 && lanes == kLutAvx512Lanes && cols % (8 * lanes) >= 64;
}
// The column that vector v, lane j of the panel holds (may be >= cols: a zero).
inline int64_t lut_panel_column(int64_t v, int64_t j, int64_t lanes, int bits, int64_t cols) {
  const int64_t block_codes = 8 * lanes, whole = cols / block_codes;
  if (bits == 4 && v / 8 < whole) return v / 8 * block_codes + 8 * j + v % 8;
  if (lut_half_block(bits, lanes, cols) && v / 8 == whole && v % 8 < 4)
    return whole * block_codes + 8 * (j % 8) + 2 * (v % 8) + j / 8;
  return v * lanes + j;
}

// Computes y[i, n] for every i < batch.m and n in [row0, row1).
using LutGemvRowsFn = void (*)(const LutGemvBatch& batch, int64_t row0, int64_t row1);
void lut_gemv_rows_scalar(const LutGemvBatch& batch, int64_t row0, int64_t row1);
void lut_gemv_rows_avx2(const LutGemvBatch& batch, int64_t row0, int64_t row1);
void lut_gemv_rows_avx512(const LutGemvBatch& batch, int64_t row0, int64_t row1);
void lut_gemv_rows_avx512vbmi(const LutGemvBatch& batch, int64_t row0, int64_t row1);  // AVX-512 + VBMI

// Writes rows [row0, row0 + nrows) of w' to out [nrows, cols].
using LutDequantizeRowsFn = void (*)(const LutWeightsView& w, int64_t row0, int64_t nrows, float* out);
void lut_dequantize_rows_scalar(const LutWeightsView& w, int64_t row0, int64_t nrows, float* out);
void lut_dequantize_rows_avx2(const LutWeightsView& w, int64_t row0, int64_t nrows, float* out);
void lut_dequantize_rows_avx512(const LutWeightsView& w, int64_t row0, int64_t nrows, float* out);

}  // namespace fsq::cpu
