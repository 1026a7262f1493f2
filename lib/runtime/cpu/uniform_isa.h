// The per-instruction-set halves of the uniform kernels, called by the dispatcher
// (uniform_gemv.cpp) with arguments it has already checked.
//
// The AVX2 and AVX-512 versions live in their own .cpp files compiled with -mavx2 /
// -mavx512f etc. (lib/runtime/CMakeLists.txt). Those files must not call an inline function
// or instantiate a template that baseline code may also use (std::vector, std::min, fsq
// helpers): the linker keeps one copy of each, and if it kept the AVX-512 one, a CPU
// without AVX-512 would crash in baseline code. They use intrinsics, memcpy, type-only
// templates (std::integer_sequence) and their own helpers: in anonymous namespaces, static
// (byte_loads.h), or in a namespace per instruction set shared only by the files compiled
// with its flags (simd_avx2.h, simd_avx512.h).
#pragma once

#include <cstdint>

#include "runtime/cpu/uniform_kernels.h"

namespace fsq::cpu {

// One batch of at most kMaxGemvRows activation rows against all weight rows.
struct GemvBatch {
  const UniformWeightsView* w = nullptr;
  int64_t m = 0;
  const float* x = nullptr;  // [m, cols], row stride x_stride: what the scalar GEMV reads
  int64_t x_stride = 0;
  const float* panel = nullptr;  // x as the SIMD GEMVs read it (PanelLayout below)
  float* y = nullptr;            // [m, rows], row stride y_stride
  int64_t y_stride = 0;
};

// The SIMD GEMVs read x as a "panel" of vectors of `lanes` floats: panel vector v of row i
// is at panel + (v * m + i) * lanes, so one step's vectors for all m rows are adjacent.
// Column k of group g (k0 = g * group_cols) is in vector g * ceil(group_cols / lanes) +
// (k - k0) / lanes; lanes past a group's end (per-channel rows only) hold 0. For 4-bit
// codes, which they decode 2 * lanes at a time as two vectors ("nibble planes": the low
// nibbles, i.e. the even columns, then the high nibbles, the odd columns), each whole step
// of 2 * lanes columns of a group is stored as its even columns, then its odd columns.
struct PanelLayout {
  int64_t lanes = 0;
  bool nibble_planes = false;
};
inline constexpr int64_t kAvx2Lanes = 8;
inline constexpr int64_t kAvx512Lanes = 16;

// Computes y[i, n] for every i < batch.m and n in [row0, row1).
using GemvRowsFn = void (*)(const GemvBatch& batch, int64_t row0, int64_t row1);
void gemv_rows_scalar(const GemvBatch& batch, int64_t row0, int64_t row1);
void gemv_rows_avx2(const GemvBatch& batch, int64_t row0, int64_t row1);
void gemv_rows_avx512(const GemvBatch& batch, int64_t row0, int64_t row1);

// Writes rows [row0, row0 + nrows) dequantized to out [nrows, cols].
using DequantizeRowsFn = void (*)(const UniformWeightsView& w, int64_t row0, int64_t nrows, float* out);
void dequantize_rows_scalar(const UniformWeightsView& w, int64_t row0, int64_t nrows, float* out);
void dequantize_rows_avx2(const UniformWeightsView& w, int64_t row0, int64_t nrows, float* out);
void dequantize_rows_avx512(const UniformWeightsView& w, int64_t row0, int64_t nrows, float* out);

}  // namespace fsq::cpu
