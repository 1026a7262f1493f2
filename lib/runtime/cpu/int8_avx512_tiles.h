// The store and tile loop shared by the two AVX-512 int8 GEMMs (int8_kernels_avx512.cpp,
// int8_kernels_avx512_vnni.cpp). Everything here is static: those files are compiled with
// different flags (-mavx512vnni for one), so each must keep its own copy (uniform_isa.h).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <utility>

#include "runtime/cpu/int8_isa.h"

namespace fsq::cpu {

// Calls f(std::integral_constant<int, I>) for I = 0 .. N - 1, inlined: the tiles index their
// accumulator arrays with constants from the start, so that GCC keeps them in registers
// (with `#pragma GCC unroll` it kept a stack copy of every accumulator, stored each step).
#define FSQ_INT8_INLINE __attribute__((always_inline))
template <int N, typename F>
FSQ_INT8_INLINE static inline void int8_unroll(const F& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) FSQ_INT8_INLINE {
    (f(std::integral_constant<int, I>{}), ...);
  }(std::make_integer_sequence<int, N>{});
}

// x[i, 4 q .. 4 q + 3] in every 32-bit lane: lane r meets output row 16 b + r.
static inline __m512i int8_broadcast_quad(const int8_t* p) {
  int32_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return _mm512_set1_epi32(v);
}

// Writes the int32 sums of x row i against block b (lane r: output row 16 b + r), or the
// epilogue float(acc) * (x_scales[i] * w_scales[n]) of them; nothing past g.rows.
static inline void int8_store_block_avx512(const Int8Gemm& g, int64_t i, int64_t b, __m512i acc) {
  const int64_t n0 = b * kInt8BlockRows;
  const int64_t valid = g.rows - n0;
  const __mmask16 mask = valid >= kInt8BlockRows ? static_cast<__mmask16>(0xFFFF)
                                                 : static_cast<__mmask16>((1u << valid) - 1);
  if (g.y != nullptr) {
    const __m512 scale = _mm512_mul_ps(_mm512_set1_ps(g.x_scales[i]), _mm512_maskz_loadu_ps(mask, g.w_scales + n0));
    _mm512_mask_storeu_ps(g.y + i * g.y_stride + n0, mask, _mm512_mul_ps(_mm512_cvtepi32_ps(acc), scale));
  } else {
    _mm512_mask_storeu_epi32(g.acc + i * g.acc_stride + n0, mask, acc);
  }
}

// Stores a tile's sums (rows i0 .. i0 + mr - 1, blocks b0 .. b0 + nr - 1, row-major) from
// memory: the kernels leave their accumulators there once, so that the register allocator
// need not keep them addressable through the whole k loop.
static inline void int8_store_tile_avx512(const Int8Gemm& g, int64_t i0, int64_t b0, int mr, int nr,
                                          const __m512i* sums) {
  for (int i = 0; i < mr; ++i)
    for (int j = 0; j < nr; ++j) int8_store_block_avx512(g, i0 + i, b0 + j, sums[i * nr + j]);
}

// Calls tile(i, b, rows, blocks) over [i0, i1) x [b0, b1) in tiles of at most mr rows of x
// times nr blocks: panels of nr blocks outer, so a panel is reused from cache by every row.
template <typename Tile>
static inline void int8_for_each_tile(int64_t i0, int64_t i1, int64_t b0, int64_t b1, int64_t mr, int64_t nr,
                                      const Tile& tile) {
  for (int64_t b = b0; b < b1; b += nr) {
    const int64_t blocks = b1 - b < nr ? b1 - b : nr;
    for (int64_t i = i0; i < i1; i += mr) tile(i, b, i1 - i < mr ? i1 - i : mr, blocks);
  }
}

}  // namespace fsq::cpu
