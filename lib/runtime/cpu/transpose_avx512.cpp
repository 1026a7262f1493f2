// AVX-512 half of transpose.h. Compiled with the AVX-512 flags (lib/runtime/CMakeLists.txt);
// called only where the CPU has them.
//
// A tile of 16 x 16 floats is transposed in registers in three steps: 32-bit then 64-bit
// interleaves within 128-bit lanes give, per lane L, 4 rows at column 4L + c; two 128-bit
// lane shuffles then gather each column's 16 rows. Edge tiles load and store under masks.
#include <immintrin.h>

#include <cstdint>

#include "runtime/cpu/transpose.h"

namespace fsq::cpu {
namespace {

constexpr int64_t kTile = 16;

__mmask16 first(int64_t n) {
  return n >= kTile ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1);
}

// r[i] = row i of the tile (columns in lanes) -> r[j] = column j (rows in lanes).
void transpose_tile(__m512 r[kTile]) {
  __m512 a[kTile], b[kTile];
  for (int k = 0; k < kTile; k += 2) {
    a[k] = _mm512_unpacklo_ps(r[k], r[k + 1]);
    a[k + 1] = _mm512_unpackhi_ps(r[k], r[k + 1]);
  }
  for (int j = 0; j < kTile; j += 4) {
    const __m512d lo0 = _mm512_castps_pd(a[j]), lo1 = _mm512_castps_pd(a[j + 2]);
    const __m512d hi0 = _mm512_castps_pd(a[j + 1]), hi1 = _mm512_castps_pd(a[j + 3]);
    b[j] = _mm512_castpd_ps(_mm512_unpacklo_pd(lo0, lo1));      // rows j..j+3, columns 4L
    b[j + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo0, lo1));  // columns 4L + 1
    b[j + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(hi0, hi1));  // columns 4L + 2
    b[j + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(hi0, hi1));  // columns 4L + 3
  }
  for (int c = 0; c < 4; ++c) {
    const __m512 p0 = _mm512_shuffle_f32x4(b[c], b[4 + c], 0x44), q0 = _mm512_shuffle_f32x4(b[c], b[4 + c], 0xEE);
    const __m512 p1 = _mm512_shuffle_f32x4(b[8 + c], b[12 + c], 0x44),
                 q1 = _mm512_shuffle_f32x4(b[8 + c], b[12 + c], 0xEE);
    r[c] = _mm512_shuffle_f32x4(p0, p1, 0x88);
    r[4 + c] = _mm512_shuffle_f32x4(p0, p1, 0xDD);
    r[8 + c] = _mm512_shuffle_f32x4(q0, q1, 0x88);
    r[12 + c] = _mm512_shuffle_f32x4(q0, q1, 0xDD);
  }
}

template <bool kAdd>
void transpose_avx512(const float* src, int64_t src_stride, int64_t rows, int64_t cols, float* dst,
                      int64_t dst_stride) {
  for (int64_t i0 = 0; i0 < rows; i0 += kTile)
    for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
      const int64_t tile_rows = rows - i0 < kTile ? rows - i0 : kTile;
      const int64_t tile_cols = cols - j0 < kTile ? cols - j0 : kTile;
      const __mmask16 col_mask = first(tile_cols), row_mask = first(tile_rows);
      __m512 r[kTile];
      for (int64_t i = 0; i < kTile; ++i)
        r[i] = i < tile_rows ? _mm512_maskz_loadu_ps(col_mask, src + (i0 + i) * src_stride + j0) : _mm512_setzero_ps();
      transpose_tile(r);
      for (int64_t j = 0; j < tile_cols; ++j) {
        float* out = dst + (j0 + j) * dst_stride + i0;
        if constexpr (kAdd)
          _mm512_mask_storeu_ps(out, row_mask, _mm512_add_ps(_mm512_maskz_loadu_ps(row_mask, out), r[j]));
        else
          _mm512_mask_storeu_ps(out, row_mask, r[j]);
      }
    }
}

}  // namespace

void transpose_f32_avx512(const float* src, int64_t src_stride, int64_t rows, int64_t cols, float* dst,
                          int64_t dst_stride) {
  transpose_avx512<false>(src, src_stride, rows, cols, dst, dst_stride);
}

void add_transposed_f32_avx512(const float* src, int64_t src_stride, int64_t rows, int64_t cols, float* dst,
                               int64_t dst_stride) {
  transpose_avx512<true>(src, src_stride, rows, cols, dst, dst_stride);
}

}  // namespace fsq::cpu
