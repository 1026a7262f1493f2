// The scalar transposes and the run-time choice of transpose.h.
#include "runtime/cpu/transpose.h"

#include <algorithm>

#include "runtime/cpu/uniform_kernels.h"  // cpu_supports

namespace fsq::cpu {
namespace {

constexpr int64_t kTile = 16;  // square tiles: cache lines both ways

template <bool kAdd>
void transpose_scalar(const float* src, int64_t src_stride, int64_t rows, int64_t cols, float* dst,
                      int64_t dst_stride) {
  for (int64_t i0 = 0; i0 < rows; i0 += kTile)
    for (int64_t j0 = 0; j0 < cols; j0 += kTile)
      for (int64_t j = j0; j < std::min(cols, j0 + kTile); ++j)
        for (int64_t i = i0; i < std::min(rows, i0 + kTile); ++i) {
          if constexpr (kAdd)
            dst[j * dst_stride + i] += src[i * src_stride + j];
          else
            dst[j * dst_stride + i] = src[i * src_stride + j];
        }
}

bool use_avx512() {
  static const bool avx512 = cpu_supports(CpuIsa::Avx512);
  return avx512;
}

}  // namespace

void transpose_f32_scalar(const float* src, int64_t src_stride, int64_t rows, int64_t cols, float* dst,
                          int64_t dst_stride) {
  transpose_scalar<false>(src, src_stride, rows, cols, dst, dst_stride);
}

void add_transposed_f32_scalar(const float* src, int64_t src_stride, int64_t rows, int64_t cols, float* dst,
                               int64_t dst_stride) {
  transpose_scalar<true>(src, src_stride, rows, cols, dst, dst_stride);
}

void transpose_f32(const float* src, int64_t src_stride, int64_t rows, int64_t cols, float* dst, int64_t dst_stride) {
  if (use_avx512())
    transpose_f32_avx512(src, src_stride, rows, cols, dst, dst_stride);
  else
    transpose_f32_scalar(src, src_stride, rows, cols, dst, dst_stride);
}

void add_transposed_f32(const float* src, int64_t src_stride, int64_t rows, int64_t cols, float* dst,
                        int64_t dst_stride) {
  if (use_avx512())
    add_transposed_f32_avx512(src, src_stride, rows, cols, dst, dst_stride);
  else
    add_transposed_f32_scalar(src, src_stride, rows, cols, dst, dst_stride);
}

}  // namespace fsq::cpu
