// AVX-512 (F, BW, VL) variant of the int8 kernels without VNNI: the activation quantizer
// (used by both AVX-512 GEMMs) and a vpmaddubsw + vpmaddwd GEMM. Compiled with -mavx512f
// -mavx512bw -mavx512vl (lib/runtime/CMakeLists.txt), without -mavx512vnni: this file runs
// on AVX-512 CPUs that lack it.
//
// vpmaddubsw multiplies unsigned by signed bytes and adds pairs with int16 saturation, so
// the weights go in as |w| (unsigned) and x takes w's sign (negated where w < 0): with
// |w|, |x| <= 127 a pair sums to at most 2 * 127^2 = 32258 < 32767, never saturating.
// (Biased weights, up to 255, could saturate: that is why only vpdpbusd uses the bias.)
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "runtime/cpu/int8_avx512_tiles.h"
#include "runtime/cpu/int8_isa.h"

namespace fsq::cpu {
namespace {

// MR * NR accumulators plus NR weight vectors, x, and constants: within 32 registers. Each
// product takes 4 instructions (negate, vpmaddubsw, vpmaddwd, add), so two blocks suffice.
constexpr int64_t kGemmRows = 6, kMaxRows = 8, kBlocks = 2;
constexpr float kCodeMax = 127.0f;

template <int MR, int NR>
void tile(const Int8Gemm& g, int64_t i0, int64_t b0) {
  const int64_t quads = g.kp / 4, block_bytes = quads * kInt8QuadBytes;
  const uint8_t* w = g.w + b0 * block_bytes;
  const int8_t* x = g.xq + i0 * g.xq_stride;
  const __m512i unbias = _mm512_set1_epi8(static_cast<char>(kInt8WeightBias)), ones = _mm512_set1_epi16(1);
  const __m512i zero = _mm512_setzero_si512();
  __m512i acc[MR][NR];
  int8_unroll<MR>([&](auto i) FSQ_INT8_INLINE {
    int8_unroll<NR>([&](auto j) FSQ_INT8_INLINE { acc[i][j] = zero; });
  });
  for (int64_t q = 0; q < quads; ++q) {
    __m512i magnitude[NR];
    __mmask64 negative[NR];
    int8_unroll<NR>([&](auto j) FSQ_INT8_INLINE {
      const __m512i wj = _mm512_xor_si512(_mm512_loadu_si512(w + j * block_bytes + q * kInt8QuadBytes), unbias);
      magnitude[j] = _mm512_abs_epi8(wj);
      negative[j] = _mm512_movepi8_mask(wj);
    });
    int8_unroll<MR>([&](auto i) FSQ_INT8_INLINE {
      const __m512i xb = int8_broadcast_quad(x + i * g.xq_stride + 4 * q);
      int8_unroll<NR>([&](auto j) FSQ_INT8_INLINE {
        const __m512i signed_x = _mm512_mask_sub_epi8(xb, negative[j], zero, xb);
        const __m512i pairs = _mm512_maddubs_epi16(magnitude[j], signed_x);
        acc[i][j] = _mm512_add_epi32(acc[i][j], _mm512_madd_epi16(pairs, ones));
      });
    });
  }
  __m512i sums[MR][NR];  // a copy: acc itself must not have its address taken
  int8_unroll<MR>([&](auto i) FSQ_INT8_INLINE {
    int8_unroll<NR>([&](auto j) FSQ_INT8_INLINE { sums[i][j] = acc[i][j]; });
  });
  int8_store_tile_avx512(g, i0, b0, MR, NR, &sums[0][0]);
}

using TileFn = void (*)(const Int8Gemm& g, int64_t i0, int64_t b0);
#define FSQ_INT8_TILES(r) {tile<r, 1>, tile<r, 2>}
constexpr TileFn kTiles[kMaxRows][kBlocks] = {FSQ_INT8_TILES(1), FSQ_INT8_TILES(2), FSQ_INT8_TILES(3),
                                              FSQ_INT8_TILES(4), FSQ_INT8_TILES(5), FSQ_INT8_TILES(6),
                                              FSQ_INT8_TILES(7), FSQ_INT8_TILES(8)};
#undef FSQ_INT8_TILES

}  // namespace

void int8_tiles_avx512bw(const Int8Gemm& g, int64_t i0, int64_t i1, int64_t b0, int64_t b1) {
  const int64_t m = i1 - i0;
  int8_for_each_tile(i0, i1, b0, b1, m <= kMaxRows ? m : kGemmRows, kBlocks,
                     [&](int64_t i, int64_t b, int64_t rows, int64_t blocks) { kTiles[rows - 1][blocks - 1](g, i, b); });
}

// As quantize_row_int8_scalar: vmaxps returns its second operand when the first is NaN,
// which is fmax's choice of -127 for a NaN product; vcvtps2dq rounds half to even.
void quantize_row_int8_avx512(const float* x, int64_t cols, ActQuant mode, float static_scale, int8_t* q,
                              float* x_scale) {
  constexpr int64_t kLanes = 16;
  const int64_t full = cols / kLanes * kLanes;
  const auto tail = static_cast<__mmask16>((1u << (cols - full)) - 1);
  float inv = 0.0f;
  if (mode == ActQuant::PerToken) {
    __m512 amax = _mm512_setzero_ps();
    for (int64_t k = 0; k < full; k += kLanes) amax = _mm512_max_ps(amax, _mm512_abs_ps(_mm512_loadu_ps(x + k)));
    if (tail != 0) amax = _mm512_max_ps(amax, _mm512_abs_ps(_mm512_maskz_loadu_ps(tail, x + full)));
    const float a = _mm512_reduce_max_ps(amax);
    if (a == 0.0f) {
      *x_scale = 0.0f;
      std::memset(q, 0, static_cast<size_t>(cols));
      return;
    }
    *x_scale = a / kCodeMax;
    inv = kCodeMax / a;
  } else {
    *x_scale = static_scale;
    inv = 1.0f / static_scale;
  }
  const __m512 scale = _mm512_set1_ps(inv), lo = _mm512_set1_ps(-kCodeMax), hi = _mm512_set1_ps(kCodeMax);
  const auto codes = [&](__m512 v) {
    return _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(v, scale), lo), hi));
  };
  for (int64_t k = 0; k < full; k += kLanes)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + k), _mm512_cvtepi32_epi8(codes(_mm512_loadu_ps(x + k))));
  if (tail != 0) _mm512_mask_cvtepi32_storeu_epi8(q + full, tail, codes(_mm512_maskz_loadu_ps(tail, x + full)));
}

}  // namespace fsq::cpu
