// Float matrix transposes for the kernels that switch between row-major layouts (the sparse
// part of the LUT prefill GEMM): an AVX-512 path of 16 x 16 register tiles, chosen at run
// time, and the scalar loops it must match exactly (they only move and add floats).
#pragma once

#include <cstdint>

namespace fsq::cpu {

// dst[j * dst_stride + i] = src[i * src_stride + j] for i < rows, j < cols.
void transpose_f32(const float* src, int64_t src_stride, int64_t rows, int64_t cols, float* dst, int64_t dst_stride);
// dst[j * dst_stride + i] += src[i * src_stride + j] for i < rows, j < cols.
void add_transposed_f32(const float* src, int64_t src_stride, int64_t rows, int64_t cols, float* dst,
                        int64_t dst_stride);

// The scalar versions (the reference of the tests; used where the CPU lacks AVX-512).
void transpose_f32_scalar(const float* src, int64_t src_stride, int64_t rows, int64_t cols, float* dst,
                          int64_t dst_stride);
void add_transposed_f32_scalar(const float* src, int64_t src_stride, int64_t rows, int64_t cols, float* dst,
                               int64_t dst_stride);

// The AVX-512 versions (transpose_avx512.cpp); call only where cpu_supports(CpuIsa::Avx512).
void transpose_f32_avx512(const float* src, int64_t src_stride, int64_t rows, int64_t cols, float* dst,
                          int64_t dst_stride);
void add_transposed_f32_avx512(const float* src, int64_t src_stride, int64_t rows, int64_t cols, float* dst,
                               int64_t dst_stride);

}  // namespace fsq::cpu
