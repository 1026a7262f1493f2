// AVX-512 VNNI + VBMI half of lut_gemv_q8 for 3-bit codes (lut_q8_isa.h; the loop is in
// lut_q8_loops.h), and the 3-bit row unpacking, LUT and uniform, of the q8 prefill GEMM's
// tiles (q8_tile_unpack.h). Compiled with the AVX-512 flags, -mavx512vnni and -mavx512vbmi
// (lib/runtime/CMakeLists.txt); called only when the CPU has both. Keep the includes
// minimal (uniform_isa.h says why).
//
// A chunk is 24 code bytes, 64 columns in order: vpermb gives qword j the 3 bytes of codes
// 8j .. 8j + 7, vpmultishiftqb moves code 8j + k to byte k of it (bits 3k .. 3k + 7), and
// after masking to 3 bits one vpshufb looks them up in the row's table.
#include "runtime/cpu/lut_q8_loops.h"
#include "runtime/cpu/q8_tile_unpack.h"

namespace fsq::cpu {
namespace {

struct Codes3 {
  static constexpr int kBits = 3, kDots = 1;
  static constexpr int64_t kChunkCols = 64;
  __attribute__((always_inline)) static void decode(const uint8_t* p, int64_t bytes, int64_t avail, __m512i table,
                                                    __m512i* u) {
    // Qword j: bytes 3j, 3j + 1, 3j + 2 (and 3j + 2 again, unused) in its low dword.
    const __m512i spread = _mm512_set_epi64(0x17171615, 0x14141312, 0x1111100f, 0x0e0e0d0c, 0x0b0b0a09, 0x08080706,
                                            0x05050403, 0x02020100);
    const __m512i select = _mm512_set1_epi64(0x15120f0c09060300);
    // 32 bytes for the chunk's 24 where the matrix goes on that far (the 8 more are not
    // selected by spread), else a masked load of just the chunk's bytes.
    const __m512i codes = avail >= 32 ? _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))
                                      : _mm512_maskz_loadu_epi8(~uint64_t{0} >> (64 - bytes), p);
    const __m512i bits = _mm512_multishift_epi64_epi8(select, _mm512_permutexvar_epi8(spread, codes));
    u[0] = _mm512_shuffle_epi8(table, _mm512_and_si512(bits, _mm512_set1_epi8(0x07)));
  }
};

}  // namespace

void lut_q8_rows_avx512vbmi(const LutQ8Batch& b, int64_t row0, int64_t row1) { lut_q8_rows<Codes3>(b, row0, row1); }

namespace {

static_assert(Codes3::kChunkCols == kTileStepCols, "a tile step is one 3-bit chunk");

// The step's 3-bit codes looked up in `table` (the identity for uniform codes). The codes of
// 3-bit uniform and LUT matrices are packed alike (packed_code.h).
__m512i decode_step3(const uint8_t* row_bytes, int64_t k, int64_t count, const uint8_t* end, __m512i table) {
  constexpr int64_t kChunkBytes = Codes3::kChunkCols * Codes3::kBits / 8;
  const uint8_t* p = row_bytes + k / Codes3::kChunkCols * kChunkBytes;
  __m512i out;
  Codes3::decode(p, (count * Codes3::kBits + 7) / 8, end - p, table, &out);
  return out;
}

}  // namespace

void unpack_lut3_rows_avx512vbmi(const LutWeightsView& w, const LutQ8Tables& t, int64_t n0, int8_t* rows) {
  const auto* end = reinterpret_cast<const uint8_t*>(w.words + w.rows * w.words_per_row);
  unpack_lut_tile_rows(w, t, n0, rows, [end](__m512i table, const uint8_t* bytes, int64_t k, int64_t count) {
    return decode_step3(bytes, k, count, end, table);
  });
}

void unpack_uniform3_rows_avx512vbmi(const UniformWeightsView& w, int64_t n0, int8_t* rows) {
  const auto* end = reinterpret_cast<const uint8_t*>(w.words + w.rows * w.words_per_row);
  const __m512i identity = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  unpack_uniform_tile_rows(w, n0, rows, [end, identity](const uint8_t* bytes, int64_t k, int64_t count) {
    return decode_step3(bytes, k, count, end, identity);
  });
}

}  // namespace fsq::cpu
