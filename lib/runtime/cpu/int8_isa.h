// The per-instruction-set halves of the int8 kernels, called by the dispatcher
// (int8_linear.cpp) with arguments it has already checked. The SIMD files are compiled with
// their own -m flags and follow the rules of uniform_isa.h (no inline functions or templates
// shared with baseline code).
//
// Prepared weights (int8_prepare_weights): output rows in blocks of kInt8BlockRows = 16,
// columns padded with zeros to kp = a multiple of 4 ("quads" of 4 columns). Quad q of block
// b is 64 bytes at data + (b * kp / 4 + q) * 64: byte 4 r + j holds w[16 b + r, 4 q + j]
// + 128 as an unsigned byte (rows past `rows` hold w = 0). One 32-bit lane per output row
// is what vpdpbusd accumulates into. The +128, applied once when preparing, makes the
// weights vpdpbusd's unsigned operand, so x keeps its signed codes; the bias adds
// 128 * sum_k xq[i, k] to every output of row i, subtracted exactly (x_sums: one sum per
// row of x, not per output row in the layout). The vpmaddubsw variants undo the bias
// (XOR 0x80) and use the sign trick instead.
#pragma once

#include <cstdint>

#include "runtime/cpu/int8_kernels.h"

namespace fsq::cpu {

inline constexpr int64_t kInt8BlockRows = 16;
inline constexpr int64_t kInt8QuadBytes = 4 * kInt8BlockRows;  // one quad of one block
inline constexpr int kInt8WeightBias = 128;
int64_t int8_padded_cols(int64_t cols);  // kp: cols rounded up to a multiple of 4

// One int8 GEMM: rows [i0, i1) of xq times blocks [b0, b1) of the prepared weights.
struct Int8Gemm {
  const uint8_t* w = nullptr;  // the prepared layout above
  int64_t rows = 0, kp = 0;    // output rows; padded columns (a multiple of 4)
  const int8_t* xq = nullptr;  // [m, kp] codes, zero past cols, row stride xq_stride (a multiple of 4)
  int64_t xq_stride = 0;
  const int32_t* x_sums = nullptr;  // [m] sum_k xq[i, k]
  // Float output (y != nullptr): y[i, n] = float(acc) * (x_scales[i] * w_scales[n]).
  const float* x_scales = nullptr;
  const float* w_scales = nullptr;
  float* y = nullptr;
  int64_t y_stride = 0;
  // Else the exact int32 sums.
  int32_t* acc = nullptr;
  int64_t acc_stride = 0;
};

// Computes the outputs of rows [i0, i1) and output rows [16 b0, min(rows, 16 b1)).
using Int8TilesFn = void (*)(const Int8Gemm& g, int64_t i0, int64_t i1, int64_t b0, int64_t b1);
void int8_tiles_scalar(const Int8Gemm& g, int64_t i0, int64_t i1, int64_t b0, int64_t b1);
void int8_tiles_avx2(const Int8Gemm& g, int64_t i0, int64_t i1, int64_t b0, int64_t b1);
void int8_tiles_avx512bw(const Int8Gemm& g, int64_t i0, int64_t i1, int64_t b0, int64_t b1);
void int8_tiles_avx512vnni(const Int8Gemm& g, int64_t i0, int64_t i1, int64_t b0, int64_t b1);

// Quantizes one row x[0, cols) into q[0, cols) and *x_scale as int8_kernels.h specifies
// (static_scale: PerTensor only, already checked).
using QuantizeRowFn = void (*)(const float* x, int64_t cols, ActQuant mode, float static_scale, int8_t* q,
                               float* x_scale);
void quantize_row_int8_scalar(const float* x, int64_t cols, ActQuant mode, float static_scale, int8_t* q,
                              float* x_scale);
void quantize_row_int8_avx2(const float* x, int64_t cols, ActQuant mode, float static_scale, int8_t* q,
                            float* x_scale);
void quantize_row_int8_avx512(const float* x, int64_t cols, ActQuant mode, float static_scale, int8_t* q,
                              float* x_scale);

}  // namespace fsq::cpu
