// The per-instruction-set halves of uniform_gemv_q8 (uniform_q8_kernels.h), called by its
// dispatcher (uniform_q8_gemv.cpp) with arguments it has already checked. The SIMD files
// follow the rules of uniform_isa.h.
//
// Both kernels read the weights in chunks of 16 "lanes" (the 32-bit lanes of one AVX-512
// vpdpbusd): a chunk is 64 bytes of codes, i.e. 128 columns of 4-bit codes or 64 columns
// of 8-bit codes, and lane j sums the products of columns [j * kLaneCols, (j + 1) *
// kLaneCols) of the chunk (8 or 4 columns). The dispatcher lays out each activation row to
// match (Q8Panel below). AVX2 takes each chunk as two halves of 8 lanes.
#pragma once

#include <cstdint>

#include "runtime/cpu/uniform_kernels.h"

namespace fsq::cpu {

inline constexpr int64_t kQ8ChunkBytes = 64;
inline constexpr int64_t kQ8ChunkLanes = 16;
static constexpr int64_t q8_chunk_cols(int bits) { return kQ8ChunkBytes * 8 / bits; }

// One batch of at most kMaxGemvRows quantized activation rows. Per row i (strides below):
//  - codes: per chunk c, 64 bytes (8-bit weights: the int8 codes of the chunk's 64 columns
//    in order) or 128 bytes (4-bit weights: the codes of the chunk's even columns, then of
//    its odd columns, matching the low and high nibbles of the weight bytes); zero past
//    the last column;
//  - lane_scales: per chunk, 16 floats: lane j holds d of the activation block its columns
//    are in (0 past the last column);
//  - group_sums: per weight group g, sum over the group's blocks b of d[b] * sum_k q[k]
//    (what the zero points multiply), then 16 zeros of padding.
struct Q8Batch {
  const UniformWeightsView* w = nullptr;
  int64_t m = 0;
  const int8_t* codes = nullptr;
  int64_t codes_stride = 0;
  const float* lane_scales = nullptr;
  int64_t lane_scales_stride = 0;
  const float* group_sums = nullptr;
  int64_t group_sums_stride = 0;
  float* y = nullptr;  // [m, rows], row stride y_stride
  int64_t y_stride = 0;
};

// The most groups per weight row the kernels accept (a stack buffer of float scales).
inline constexpr int64_t kQ8MaxRowGroups = 2048;

// Computes y[i, n] for every i < batch.m and n in [row0, row1).
using Q8RowsFn = void (*)(const Q8Batch& batch, int64_t row0, int64_t row1);
void q8_rows_avx2(const Q8Batch& batch, int64_t row0, int64_t row1);        // 4-bit only
void q8_rows_avx512vnni(const Q8Batch& batch, int64_t row0, int64_t row1);  // 4- and 8-bit

}  // namespace fsq::cpu
