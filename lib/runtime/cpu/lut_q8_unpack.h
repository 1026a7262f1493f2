// The row walk shared by the two unpackers of lut_gemm_q8's tiles (4-bit codes in
// uniform_q8_gemm_avx512vnni.cpp, 3-bit in lut_q8_avx512vbmi.cpp): weight rows [n0, n0 + 32)
// become row-major signed int8 table entries rows[32][cols], zeros past the matrix's last
// row. Internal linkage and intrinsics: include only from those AVX-512 files (uniform_isa.h
// says why).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "runtime/cpu/lut_q8_kernels.h"
#include "runtime/cpu/uniform_q8_isa.h"  // kQ8TileRows

namespace fsq::cpu {
namespace {

// decode(table, row_bytes, k, count): the table bytes (biased by 128, as stored) of columns
// [k, k + count) of the row whose packed codes start at row_bytes, count <= 64, in the low
// bytes of a vector; `table` holds the row's 16 table bytes in each 128-bit lane.
template <class Decode>
__attribute__((always_inline)) inline void unpack_lut_tile_rows(const LutWeightsView& w, const LutQ8Tables& t,
                                                                 int64_t n0, int8_t* rows, const Decode& decode) {
  constexpr int64_t kStepCols = 64;
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int64_t r = 0; r < kQ8TileRows; ++r) {
    const int64_t n = n0 + r;
    int8_t* dst = rows + r * w.cols;
    if (n >= w.rows) {
      std::memset(dst, 0, static_cast<size_t>(w.cols));
      continue;
    }
    const __m512i table = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.tables + n * 16)));
    const auto* bytes = reinterpret_cast<const uint8_t*>(w.words + n * w.words_per_row);
    for (int64_t k = 0; k < w.cols; k += kStepCols) {
      const int64_t count = w.cols - k < kStepCols ? w.cols - k : kStepCols;
      const __mmask64 valid = count == kStepCols ? ~__mmask64{0} : (__mmask64{1} << count) - 1;
      _mm512_mask_storeu_epi8(dst + k, valid, _mm512_xor_si512(decode(table, bytes, k, count), bias));
    }
  }
}

}  // namespace
}  // namespace fsq::cpu
