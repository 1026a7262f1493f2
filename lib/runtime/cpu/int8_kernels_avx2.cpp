// AVX2 variant of the int8 kernels: the activation quantizer and a vpmaddubsw + vpmaddwd
// GEMM with the sign trick (vpsignb gives x the sign of w; int8_kernels_avx512.cpp says why
// that never saturates). A 16-row block's quad is two 256-bit halves (rows 0-7, 8-15).
// Compiled with -mavx2 -mfma -mf16c (lib/runtime/CMakeLists.txt); called only when
// cpu_supports(CpuIsa::Avx2). Keep the includes minimal (uniform_isa.h says why).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "runtime/cpu/int8_isa.h"

namespace fsq::cpu {
namespace {

constexpr int64_t kHalfRows = 8;  // int32 lanes per 256-bit vector
constexpr int64_t kMaxRows = 4;   // 2 * 4 accumulators, 4 weight vectors and x in 16 registers
constexpr float kCodeMax = 127.0f;

// Writes outputs [8 h, 8 h + 8) of block b for x row i (only those below g.rows).
void store_half(const Int8Gemm& g, int64_t i, int64_t b, int64_t h, __m256i acc) {
  const int64_t n0 = b * kInt8BlockRows + h * kHalfRows;
  const int64_t valid = g.rows - n0;
  if (valid <= 0) return;
  if (valid >= kHalfRows) {
    if (g.y != nullptr) {
      const __m256 scale = _mm256_mul_ps(_mm256_set1_ps(g.x_scales[i]), _mm256_loadu_ps(g.w_scales + n0));
      _mm256_storeu_ps(g.y + i * g.y_stride + n0, _mm256_mul_ps(_mm256_cvtepi32_ps(acc), scale));
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(g.acc + i * g.acc_stride + n0), acc);
    }
    return;
  }
  alignas(32) int32_t sums[kHalfRows];
  _mm256_store_si256(reinterpret_cast<__m256i*>(sums), acc);
  for (int64_t r = 0; r < valid; ++r) {
    if (g.y != nullptr)
      g.y[i * g.y_stride + n0 + r] = static_cast<float>(sums[r]) * (g.x_scales[i] * g.w_scales[n0 + r]);
    else
      g.acc[i * g.acc_stride + n0 + r] = sums[r];
  }
}

template <int MR>
void tile(const Int8Gemm& g, int64_t i0, int64_t b) {
  const int64_t quads = g.kp / 4;
  const uint8_t* w = g.w + b * quads * kInt8QuadBytes;
  const int8_t* x = g.xq + i0 * g.xq_stride;
  const __m256i unbias = _mm256_set1_epi8(static_cast<char>(kInt8WeightBias)), ones = _mm256_set1_epi16(1);
  __m256i acc[MR][2];
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_si256();
  for (int64_t q = 0; q < quads; ++q) {
    __m256i wv[2], magnitude[2];
    for (int h = 0; h < 2; ++h) {
      wv[h] = _mm256_xor_si256(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + q * kInt8QuadBytes + h * 32)), unbias);
      magnitude[h] = _mm256_abs_epi8(wv[h]);
    }
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      int32_t quad = 0;
      std::memcpy(&quad, x + i * g.xq_stride + 4 * q, sizeof quad);
      const __m256i xb = _mm256_set1_epi32(quad);
      for (int h = 0; h < 2; ++h) {
        const __m256i pairs = _mm256_maddubs_epi16(magnitude[h], _mm256_sign_epi8(xb, wv[h]));
        acc[i][h] = _mm256_add_epi32(acc[i][h], _mm256_madd_epi16(pairs, ones));
      }
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int h = 0; h < 2; ++h) store_half(g, i0 + i, b, h, acc[i][h]);
}

using TileFn = void (*)(const Int8Gemm& g, int64_t i0, int64_t b);
constexpr TileFn kTiles[kMaxRows] = {tile<1>, tile<2>, tile<3>, tile<4>};

__m256 abs_ps(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

float reduce_max(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

}  // namespace

void int8_tiles_avx2(const Int8Gemm& g, int64_t i0, int64_t i1, int64_t b0, int64_t b1) {
  for (int64_t b = b0; b < b1; ++b)
    for (int64_t i = i0; i < i1; i += kMaxRows) kTiles[(i1 - i < kMaxRows ? i1 - i : kMaxRows) - 1](g, i, b);
}

// As quantize_row_int8_scalar (see quantize_row_int8_avx512 for the NaN and rounding
// argument); the last partial vector goes through a zero-padded copy.
void quantize_row_int8_avx2(const float* x, int64_t cols, ActQuant mode, float static_scale, int8_t* q,
                            float* x_scale) {
  constexpr int64_t kLanes = 8;
  const int64_t full = cols / kLanes * kLanes, rest = cols - full;
  float tail[kLanes] = {};
  std::memcpy(tail, x + full, static_cast<size_t>(rest) * sizeof(float));
  float inv = 0.0f;
  if (mode == ActQuant::PerToken) {
    __m256 amax = abs_ps(_mm256_loadu_ps(tail));
    for (int64_t k = 0; k < full; k += kLanes) amax = _mm256_max_ps(amax, abs_ps(_mm256_loadu_ps(x + k)));
    const float a = reduce_max(amax);
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
  const __m256 scale = _mm256_set1_ps(inv), lo = _mm256_set1_ps(-kCodeMax), hi = _mm256_set1_ps(kCodeMax);
  // 8 codes in the low 8 bytes (int32 -> int16 -> int8; no saturation: |code| <= 127).
  const auto codes = [&](const float* p) {
    const __m256i c = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(_mm256_loadu_ps(p), scale), lo), hi));
    const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1));
    return _mm_packs_epi16(words, words);
  };
  for (int64_t k = 0; k < full; k += kLanes) _mm_storel_epi64(reinterpret_cast<__m128i*>(q + k), codes(x + k));
  if (rest > 0) {
    alignas(16) int8_t bytes[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(bytes), codes(tail));
    std::memcpy(q + full, bytes, static_cast<size_t>(rest));
  }
}

}  // namespace fsq::cpu
