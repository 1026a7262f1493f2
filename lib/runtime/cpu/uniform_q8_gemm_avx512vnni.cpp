// AVX-512 VNNI kernel of uniform_gemm_q8 (uniform_q8_isa.h has the tile layout). Compiled
// with the AVX-512 flags and -mavx512vnni; called only when cpu_has_avx512_vnni(). Keep the
// includes minimal (uniform_isa.h says why).
//
// Register tile: up to 6 rows of x x 32 weight rows (two vectors of 16 lanes). Per
// activation block of 32 columns, 8 chunks of 4 columns: each chunk loads two vectors of
// weight codes and multiplies them with each row's 4 broadcast activation bytes (vpdpbusd,
// unsigned x signed), so 12 int32 accumulators each gather one block's dot products. They
// start at -128 * (sum of the block's codes), which removes the +128 bias of x exactly; at
// the block's end each is converted and scaled by d(row, block) x scale(weight row, group)
// into a float accumulator.
#include <immintrin.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "runtime/cpu/q8_tile_unpack.h"
#include "runtime/cpu/uniform_q8_isa.h"

namespace fsq::cpu {
namespace {

constexpr int kLanes = 16;
constexpr int kMaxTileRowsOfX = 6;
constexpr int64_t kChunksPerBlock = kQ8BlockCols / 4;

template <int RM>
void multiply_rows(const Q8GemmArgs& a, const Q8GemmTile& tile, int64_t i0, int64_t n0) {
  const int64_t blocks = a.w->cols / kQ8BlockCols;
  __m512 acc[RM][2];
  for (int r = 0; r < RM; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    const __m512i init0 = _mm512_load_si512(tile.init + b * kQ8TileRows);
    const __m512i init1 = _mm512_load_si512(tile.init + b * kQ8TileRows + kLanes);
    __m512i dot[RM][2];
    for (int r = 0; r < RM; ++r) {
      dot[r][0] = init0;
      dot[r][1] = init1;
    }
    const int8_t* codes = tile.codes + b * kQ8TileBlockBytes;
    for (int64_t c = 0; c < kChunksPerBlock; ++c) {
      const __m512i w0 = _mm512_load_si512(codes + c * 128);
      const __m512i w1 = _mm512_load_si512(codes + c * 128 + 64);
      for (int r = 0; r < RM; ++r) {
        int32_t four;
        std::memcpy(&four, a.x + (i0 + r) * a.x_stride + b * kQ8BlockCols + c * 4, sizeof(four));
        const __m512i xb = _mm512_set1_epi32(four);
        dot[r][0] = _mm512_dpbusd_epi32(dot[r][0], xb, w0);
        dot[r][1] = _mm512_dpbusd_epi32(dot[r][1], xb, w1);
      }
    }
    const __m512 s0 = _mm512_load_ps(tile.scales + b * kQ8TileRows);
    const __m512 s1 = _mm512_load_ps(tile.scales + b * kQ8TileRows + kLanes);
    for (int r = 0; r < RM; ++r) {
      const __m512 d = _mm512_set1_ps(a.d[(i0 + r) * a.d_stride + b]);
      acc[r][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[r][0]), _mm512_mul_ps(s0, d), acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[r][1]), _mm512_mul_ps(s1, d), acc[r][1]);
    }
  }
  const int64_t valid = a.w->rows - n0 < kQ8TileRows ? a.w->rows - n0 : kQ8TileRows;
  const auto mask0 = static_cast<__mmask16>(valid >= kLanes ? 0xFFFF : (1u << valid) - 1);
  const auto mask1 = static_cast<__mmask16>(valid <= kLanes ? 0 : valid >= 2 * kLanes ? 0xFFFF : (1u << (valid - kLanes)) - 1);
  for (int r = 0; r < RM; ++r) {
    float* y = a.y + (i0 + r) * a.y_stride + n0;
    _mm512_mask_storeu_ps(y, mask0, acc[r][0]);
    _mm512_mask_storeu_ps(y + kLanes, mask1, acc[r][1]);
  }
}

void multiply_all_rows(const Q8GemmArgs& a, const Q8GemmTile& tile, int64_t n0) {
  int64_t i = 0;
  for (; i + kMaxTileRowsOfX <= a.m; i += kMaxTileRowsOfX) multiply_rows<kMaxTileRowsOfX>(a, tile, i, n0);
  switch (a.m - i) {
    case 5: multiply_rows<5>(a, tile, i, n0); break;
    case 4: multiply_rows<4>(a, tile, i, n0); break;
    case 3: multiply_rows<3>(a, tile, i, n0); break;
    case 2: multiply_rows<2>(a, tile, i, n0); break;
    case 1: multiply_rows<1>(a, tile, i, n0); break;
    default: break;
  }
}

// 64 4-bit codes from 32 bytes as bytes in column order (byte i: code 2i in the low nibble,
// 2i + 1 in the high one); count columns, the rest zero.
__m512i unpack_nibbles(const uint8_t* bytes, int64_t count) {
  const __m512i low = _mm512_set1_epi16(0x000F), high = _mm512_set1_epi16(0x0F00);
  const __m512i words = _mm512_cvtepu8_epi16(
      _mm256_maskz_loadu_epi8(static_cast<__mmask32>(count == 64 ? 0xFFFFFFFFu : (1u << (count / 2)) - 1), bytes));
  return _mm512_or_si512(_mm512_and_si512(words, low), _mm512_and_si512(_mm512_slli_epi16(words, 4), high));
}

// 64 2-bit codes from 16 bytes as bytes in column order (byte i: codes 4i .. 4i + 3 from its
// low bits up); count columns, the rest zero. Byte i widened to dword i, then dword byte j
// takes bits 2j .. 2j + 1 of it: shifts by 6j line them up, one mask keeps them.
__m512i unpack_crumbs(const uint8_t* bytes, int64_t count) {
  const __m512i d = _mm512_cvtepu8_epi32(
      _mm_maskz_loadu_epi8(static_cast<__mmask16>(count == 64 ? 0xFFFFu : (1u << ((count + 3) / 4)) - 1), bytes));
  const __m512i spread = _mm512_or_si512(_mm512_or_si512(d, _mm512_slli_epi32(d, 6)),
                                         _mm512_or_si512(_mm512_slli_epi32(d, 12), _mm512_slli_epi32(d, 18)));
  return _mm512_and_si512(spread, _mm512_set1_epi8(0x03));
}

// Row-major signed table entries of 4-bit LUT rows [n0, n0 + 32) into rows[32][cols]: one
// vpshufb looks up 64 codes in the row's 16-entry int8 table (stored biased by 128).
void unpack_lut_rows(const LutWeightsView& w, const LutQ8Tables& t, int64_t n0, int8_t* rows) {
  unpack_lut_tile_rows(w, t, n0, rows, [](__m512i table, const uint8_t* bytes, int64_t k, int64_t count) {
    return _mm512_shuffle_epi8(table, unpack_nibbles(bytes + k / 2, count));
  });
}

// Row-major signed codes (code - zero) of weight rows [n0, n0 + 32) into rows[32][cols]: 2-,
// 4- and 8-bit rows unpacked here, 3-bit ones with VBMI where the CPU has it, else by the
// baseline code.
void unpack_rows(const UniformWeightsView& w, int64_t n0, int8_t* rows) {
  if (w.bits == 3 && cpu_has_avx512_vbmi()) {
    unpack_uniform3_rows_avx512vbmi(w, n0, rows);
  } else if (w.bits == 2) {
    unpack_uniform_tile_rows(w, n0, rows, [](const uint8_t* bytes, int64_t k, int64_t count) {
      return unpack_crumbs(bytes + k / 4, count);
    });
  } else if (w.bits == 4) {
    unpack_uniform_tile_rows(w, n0, rows, [](const uint8_t* bytes, int64_t k, int64_t count) {
      return unpack_nibbles(bytes + k / 2, count);
    });
  } else if (w.bits == 8) {
    unpack_uniform_tile_rows(w, n0, rows, [](const uint8_t* bytes, int64_t k, int64_t count) {
      return _mm512_maskz_loadu_epi8(count == 64 ? ~__mmask64{0} : (__mmask64{1} << count) - 1, bytes + k);
    });
  } else {
    unpack_q8_gemm_rows(w, n0, rows);
  }
}

// Packs weight rows [n0, n0 + 32) into `tile` (uniform_q8_isa.h): each output vector of
// a chunk gathers the 4 codes of 16 rows from the row-major codes; the block sums come
// from vpdpbusd against bytes of 128.
void pack_tile(const Q8GemmWeights& w, int64_t n0, int8_t* rows, const Q8GemmTile& tile) {
  if (w.lut != nullptr && w.lut->bits == 3)
    unpack_lut3_rows_avx512vbmi(*w.lut, *w.tables, n0, rows);
  else if (w.lut != nullptr)
    unpack_lut_rows(*w.lut, *w.tables, n0, rows);
  else
    unpack_rows(*w.uniform, n0, rows);
  fill_q8_gemm_tile_scales(w, n0, tile);
  const int64_t blocks = w.cols / kQ8BlockCols;
  alignas(64) int32_t offsets[kLanes];
  for (int j = 0; j < kLanes; ++j) offsets[j] = static_cast<int32_t>(j * w.cols);
  const __m512i index = _mm512_load_si512(offsets);
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int64_t b = 0; b < blocks; ++b) {
    int8_t* out = tile.codes + b * kQ8TileBlockBytes;
    for (int half = 0; half < 2; ++half) {
      const int8_t* base = rows + half * kLanes * w.cols + b * kQ8BlockCols;
      __m512i sum = _mm512_setzero_si512();
      for (int64_t c = 0; c < kChunksPerBlock; ++c) {
        const __m512i v = _mm512_i32gather_epi32(index, base + c * 4, 1);
        _mm512_store_si512(out + (c * 2 + half) * 64, v);
        sum = _mm512_dpbusd_epi32(sum, bias, v);  // 128 * (sum of the lane's 4 codes)
      }
      _mm512_store_si512(tile.init + b * kQ8TileRows + half * kLanes, _mm512_sub_epi32(_mm512_setzero_si512(), sum));
    }
  }
}

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};

}  // namespace

void quantize_q8_row_avx512(const float* x, int64_t cols, int8_t* q, float* d) {
  constexpr float kRound = 12582912.0f;  // as quantize_q8_row
  const __m512 zero = _mm512_setzero_ps(), round = _mm512_set1_ps(kRound);
  const __m512 lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
  const __m512i sign = _mm512_set1_epi32(0x7FFFFFFF);
  for (int64_t k0 = 0, b = 0; k0 < cols; k0 += kQ8BlockCols, ++b) {
    const int64_t n = cols - k0 < kQ8BlockCols ? cols - k0 : kQ8BlockCols;
    const auto m0 = static_cast<__mmask16>(n >= kLanes ? 0xFFFF : (1u << n) - 1);
    const auto m1 = static_cast<__mmask16>(n <= kLanes ? 0 : n >= 2 * kLanes ? 0xFFFF : (1u << (n - kLanes)) - 1);
    const __m512 v0 = _mm512_maskz_loadu_ps(m0, x + k0), v1 = _mm512_maskz_loadu_ps(m1, x + k0 + kLanes);
    // A NaN or infinity anywhere in the block: x * 0 is NaN there.
    const bool poison = (_mm512_cmp_ps_mask(_mm512_mul_ps(v0, zero), zero, _CMP_NEQ_UQ) |
                         _mm512_cmp_ps_mask(_mm512_mul_ps(v1, zero), zero, _CMP_NEQ_UQ)) != 0;
    const __m512 a0 = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v0), sign));
    const __m512 a1 = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v1), sign));
    const float top = _mm512_reduce_max_ps(_mm512_max_ps(a0, a1));
    const float scale = poison ? __builtin_nanf("") : top / 127.0f;
    d[b] = scale;
    if (!(scale > 0.0f)) {
      std::memset(q + k0, 0, static_cast<size_t>(n));
      continue;
    }
    const __m512 s = _mm512_set1_ps(scale);
    const auto codes = [&](__m512 v) {
      const __m512 r = _mm512_sub_ps(_mm512_add_ps(_mm512_div_ps(v, s), round), round);
      return _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(_mm512_min_ps(_mm512_max_ps(r, lo), hi)));
    };
    _mm_mask_storeu_epi8(q + k0, m0, codes(v0));
    _mm_mask_storeu_epi8(q + k0 + kLanes, m1, codes(v1));
  }
}

void q8_gemm_avx512vnni(const Q8GemmArgs& a) {
  const int64_t blocks = a.w->cols / kQ8BlockCols;
  const int64_t tiles = (a.w->rows + kQ8TileRows - 1) / kQ8TileRows;
  const auto codes_bytes = static_cast<size_t>(blocks * kQ8TileBlockBytes);
  const auto lane_bytes = static_cast<size_t>(blocks * kQ8TileRows * 4);
  const auto rows_bytes = static_cast<size_t>(kQ8TileRows * a.w->cols);  // a multiple of 64
#pragma omp parallel if (tiles > 1)
  {
    std::unique_ptr<void, AlignedFree> buffer(std::aligned_alloc(64, codes_bytes + 2 * lane_bytes + rows_bytes));
    auto* base = static_cast<char*>(buffer.get());
    auto* rows = reinterpret_cast<int8_t*>(base + codes_bytes + 2 * lane_bytes);
    const Q8GemmTile tile{reinterpret_cast<int8_t*>(base), reinterpret_cast<int32_t*>(base + codes_bytes),
                          reinterpret_cast<float*>(base + codes_bytes + lane_bytes)};
#pragma omp for schedule(static)
    for (int64_t t = 0; t < tiles; ++t) {
      pack_tile(*a.w, t * kQ8TileRows, rows, tile);
      multiply_all_rows(a, tile, t * kQ8TileRows);
    }
  }
}

}  // namespace fsq::cpu
