// The per-instruction-set halves of uniform_gemv_q8 (uniform_q8_kernels.h), called by its
// dispatcher (uniform_q8_gemv.cpp) with arguments it has already checked. The SIMD files
// follow the rules of uniform_isa.h.
//
// The kernels read the weights in chunks of 16 "lanes" (the 32-bit lanes of one AVX-512
// vpdpbusd): a chunk is 128 columns of 4-bit codes (64 bytes) or 64 columns of 8- or 3-bit
// codes (64 or 24 bytes), and lane j sums the products of columns [j * kLaneCols, (j + 1) *
// kLaneCols) of the chunk (8 or 4 columns). The dispatcher lays out each activation row to
// match (Q8Panel below). AVX2 takes each chunk as two halves of 8 lanes.
#pragma once

#include <cstdint>

#include "runtime/cpu/lut_q8_kernels.h"  // LutQ8Tables
#include "runtime/cpu/uniform_kernels.h"
#include "runtime/cpu/uniform_q8_kernels.h"  // kQ8BlockCols

namespace fsq::cpu {

inline constexpr int64_t kQ8ChunkBytes = 64;
inline constexpr int64_t kQ8ChunkLanes = 16;
// Columns per chunk: 64 activation bytes per vpdpbusd, two of them for 4-bit codes.
static constexpr int64_t q8_chunk_cols(int bits) { return bits == 4 ? 2 * kQ8ChunkBytes : kQ8ChunkBytes; }
// The q8 GEMV loops (uniform_q8_loops.h, lut_q8_loops.h) prefetch codes about this far ahead
// (uniform_simd_loops.h says why; prefetch.h, the hint), one line per line read, in the
// chunk loop: a burst of a whole row block's lines at its start (what the uniform kernel did
// first) held LLaMA-7B's 4096-column rows at ~55 % of the read bandwidth from DRAM, ~100 %
// now; 8 KiB beat 4 and 16 KiB at every SmolLM2 shape (bench_uniform_kernels, mem-kernel
// rows, one thread).
inline constexpr int64_t kQ8PrefetchBytes = 8192;

// At most kMaxGemvRows quantized activation rows, as Q8Panel holds them (q8_panel.h) and the
// uniform and LUT kernels read them. Per row i (strides below):
//  - codes: per chunk c, 64 bytes (8- and 3-bit weights: the int8 codes of the chunk's 64
//    columns in order) or 128 bytes (4-bit weights: the codes of the chunk's even columns, then of
//    its odd columns, matching the low and high nibbles of the weight bytes); zero past
//    the last column;
//  - lane_scales: per chunk, 16 floats: lane j holds d of the activation block its columns
//    are in (0 past the last column);
//  - group_sums: per weight group g, sum over the group's blocks b of d[b] * sum_k q[k]
//    (what the zero points multiply; a LUT row is one group), then 16 zeros of padding.
struct Q8Activations {
  const int8_t* codes = nullptr;
  int64_t codes_stride = 0;
  const float* lane_scales = nullptr;
  int64_t lane_scales_stride = 0;
  const float* group_sums = nullptr;
  int64_t group_sums_stride = 0;
};

// One batch of the uniform GEMV: `q8` holds m rows.
struct Q8Batch {
  const UniformWeightsView* w = nullptr;
  int64_t m = 0;
  Q8Activations q8;
  float* y = nullptr;  // [m, rows], row stride y_stride
  int64_t y_stride = 0;
};

// The most groups per weight row the kernels accept (a stack buffer of float scales).
inline constexpr int64_t kQ8MaxRowGroups = 2048;

// Computes y[i, n] for every i < batch.m and n in [row0, row1).
using Q8RowsFn = void (*)(const Q8Batch& batch, int64_t row0, int64_t row1);
void q8_rows_avx2(const Q8Batch& batch, int64_t row0, int64_t row1);        // 3-, 4- and 8-bit
void q8_rows_avx512vnni(const Q8Batch& batch, int64_t row0, int64_t row1);  // 4- and 8-bit
void q8_rows_avx512vbmi(const Q8Batch& batch, int64_t row0, int64_t row1);  // 3-bit (VNNI + VBMI)

// The prefill GEMM (uniform_gemm_q8). Output columns (weight rows) are taken in tiles of 32,
// each unpacked once per call into signed codes laid out for vpdpbusd with x broadcast: per
// activation block of 32 columns, 8 chunks of 4 columns; per chunk two halves of 16 lanes
// (tile rows 0-15, 16-31), each lane the 4 codes (code - zero) of its row in the chunk.
inline constexpr int64_t kQ8TileRows = 32;
inline constexpr int64_t kQ8TileBlockBytes = kQ8BlockCols * kQ8TileRows;  // 1024

struct Q8GemmTile {
  int8_t* codes = nullptr;   // [cols / 32][kQ8TileBlockBytes]; 0 past the last weight row
  int32_t* init = nullptr;   // [cols / 32][32]: -128 * sum over the block of (code - zero)
  float* scales = nullptr;   // [cols / 32][32]: the scale of the block's group; 0 past the last row
};

// The weights of a q8 GEMM: a uniform view, or a 3- or 4-bit LUT view with its int8 tables
// (lut_q8_kernels.h), whose signed table entries play the part of code - zero and whose
// row scale is every block's scale. rows and cols are the view's (set by whoever fills this:
// no inline accessors in this header, uniform_isa.h says why).
struct Q8GemmWeights {
  const UniformWeightsView* uniform = nullptr;
  const LutWeightsView* lut = nullptr;
  const LutQ8Tables* tables = nullptr;
  int64_t rows = 0, cols = 0;
};

// Baseline-code parts of packing a tile of weight rows [n0, n0 + 32) (rows past w.rows give
// zeros): the codes minus their zero points (LUT: the signed table entries), row-major into
// out[32][cols] (any width; the VNNI kernel unpacks 4- and 8-bit uniform and 4-bit LUT rows
// itself, 3-bit rows with the VBMI functions below), and tile.scales.
void unpack_q8_gemm_rows(const UniformWeightsView& w, int64_t n0, int8_t* out);
// The signed table entries of 3-bit LUT rows [n0, n0 + 32), row-major into out[32][cols]
// (rows past w.rows give zeros); lut_q8_avx512vbmi.cpp, for CPUs with AVX-512 VBMI.
void unpack_lut3_rows_avx512vbmi(const LutWeightsView& w, const LutQ8Tables& t, int64_t n0, int8_t* out);
// The same for 3-bit uniform rows: code - zero, as unpack_q8_gemm_rows gives them.
void unpack_uniform3_rows_avx512vbmi(const UniformWeightsView& w, int64_t n0, int8_t* out);
void fill_q8_gemm_tile_scales(const Q8GemmWeights& w, int64_t n0, const Q8GemmTile& tile);

// y[i, n] for i < m and every weight row n, from activation codes biased to unsigned
// (x[i, k] = q + 128, as vpdpbusd takes them) and their block scales d[i, b].
struct Q8GemmArgs {
  const Q8GemmWeights* w = nullptr;
  int64_t m = 0;
  const uint8_t* x = nullptr;
  int64_t x_stride = 0;
  const float* d = nullptr;
  int64_t d_stride = 0;
  float* y = nullptr;
  int64_t y_stride = 0;
};
void q8_gemm_avx512vnni(const Q8GemmArgs& args);  // OpenMP over tiles of 32 weight rows

// Quantizes x [m, w.cols] per q8 block and runs q8_gemm_avx512vnni into y (the caller has
// checked the call and that the CPU has AVX-512 VNNI). Shared by uniform_gemm_q8 and
// lut_gemm_q8.
void run_q8_gemm(const Q8GemmWeights& w, const float* x, int64_t m, int64_t x_stride, float* y, int64_t y_stride);

// quantize_q8_row in AVX-512 (the same operations per element, so the same codes and
// scales bit for bit); the scalar loop does not vectorize (its max and NaN checks are
// reductions GCC keeps in order).
void quantize_q8_row_avx512(const float* x, int64_t cols, int8_t* q, float* d);
// quantize_q8_row_avx512 where the CPU has AVX-512 VNNI (the file it lives in needs it),
// else quantize_q8_row.
void quantize_q8_row_fast(const float* x, int64_t cols, int8_t* q, float* d);

}  // namespace fsq::cpu
