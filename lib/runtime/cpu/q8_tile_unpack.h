// The row walks shared by the unpackers of the q8 prefill GEMM's tiles (uniform_q8_isa.h):
// weight rows [n0, n0 + 32) become row-major int8 values rows[32][cols] (zeros past the
// matrix's last row), 64 columns per step. LUT rows: their signed table entries (4-bit
// codes in uniform_q8_gemm_avx512vnni.cpp, 3-bit in lut_q8_avx512vbmi.cpp); uniform rows:
// code - zero (2-, 4- and 8-bit in the VNNI file, 3-bit in the VBMI one). Internal linkage and
// intrinsics: include only from those AVX-512 files (uniform_isa.h says why).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "runtime/cpu/lut_q8_kernels.h"
#include "runtime/cpu/uniform_q8_isa.h"  // kQ8TileRows

namespace fsq::cpu {
namespace {

constexpr int64_t kTileStepCols = 64;

// Stores step(n, k, count) (a vector whose low count bytes are row n's values of columns
// [k, k + count), count <= 64) for every row of the tile.
template <class Step>
__attribute__((always_inline)) inline void unpack_tile_rows(int64_t matrix_rows, int64_t cols, int64_t n0,
                                                            int8_t* rows, const Step& step) {
  for (int64_t r = 0; r < kQ8TileRows; ++r) {
    const int64_t n = n0 + r;
    int8_t* dst = rows + r * cols;
    if (n >= matrix_rows) {
      std::memset(dst, 0, static_cast<size_t>(cols));
      continue;
    }
    for (int64_t k = 0; k < cols; k += kTileStepCols) {
      const int64_t count = cols - k < kTileStepCols ? cols - k : kTileStepCols;
      const __mmask64 valid = count == kTileStepCols ? ~__mmask64{0} : (__mmask64{1} << count) - 1;
      _mm512_mask_storeu_epi8(dst + k, valid, step(n, k, count));
    }
  }
}

// LUT rows: decode(table, row_bytes, k, count) gives the table bytes (biased by 128, as
// stored) of the step's columns, `table` holding the row's 16 table bytes in each 128-bit lane.
template <class Decode>
__attribute__((always_inline)) inline void unpack_lut_tile_rows(const LutWeightsView& w, const LutQ8Tables& t,
                                                                 int64_t n0, int8_t* rows, const Decode& decode) {
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
  unpack_tile_rows(w.rows, w.cols, n0, rows, [&](int64_t n, int64_t k, int64_t count) {
    const __m512i table = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.tables + n * 16)));
    const auto* bytes = reinterpret_cast<const uint8_t*>(w.words + n * w.words_per_row);
    return _mm512_xor_si512(decode(table, bytes, k, count), bias);
  });
}

// Uniform rows: decode(row_bytes, k, count) gives the step's codes as bytes; their zero
// points are subtracted (groups are multiples of 32 columns: at most two per step).
template <class Decode>
__attribute__((always_inline)) inline void unpack_uniform_tile_rows(const UniformWeightsView& w, int64_t n0,
                                                                     int8_t* rows, const Decode& decode) {
  const int64_t groups = w.cols / w.group_cols;
  const int symmetric_zero = 1 << (w.bits - 1);
  unpack_tile_rows(w.rows, w.cols, n0, rows, [&](int64_t n, int64_t k, int64_t count) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(w.words + n * w.words_per_row);
    const int64_t g0 = k / w.group_cols, g1 = (k + 32) / w.group_cols;
    const int zero0 = w.zeros ? w.zeros[n * groups + g0] : symmetric_zero;
    const int zero1 = count <= 32 ? zero0 : (w.zeros ? w.zeros[n * groups + g1] : symmetric_zero);
    const __m512i zeros = _mm512_mask_blend_epi8(~__mmask64{0} << 32, _mm512_set1_epi8(static_cast<char>(zero0)),
                                                 _mm512_set1_epi8(static_cast<char>(zero1)));
    return _mm512_sub_epi8(decode(bytes, k, count), zeros);
  });
}

}  // namespace
}  // namespace fsq::cpu
