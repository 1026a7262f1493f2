// AVX-512 VNNI half of lut_gemv_q8 for 4-bit codes (lut_q8_isa.h; the loop is in
// lut_q8_loops.h). Compiled with the AVX-512 flags and -mavx512vnni
// (lib/runtime/CMakeLists.txt); called only when cpu_has_avx512_vnni(). Keep the includes
// minimal (uniform_isa.h says why).
//
// A chunk is 64 code bytes, 128 columns: the low and the high nibbles looked up in the row's
// int8 table by one vpshufb each (its 16 entries repeat in every 128-bit lane), against the
// panel's even and odd columns.
#include "runtime/cpu/lut_q8_loops.h"

namespace fsq::cpu {
namespace {

struct Codes4 {
  static constexpr int kDots = 2;
  static constexpr int64_t kChunkCols = 128, kChunkBytes = 64;
  using Table = __m512i;
  static LutQ8Codes codes(const LutQ8Batch& b) { return lut_q8_packed_codes(b); }
  static int64_t tail_bytes(int64_t cols) { return (cols % kChunkCols) / 2; }
  // The 16 entries in each 128-bit lane, as vpshufb reads them.
  __attribute__((always_inline)) static __m512i table(const uint8_t* t) {
    return _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)));
  }
  __attribute__((always_inline)) static void decode(const uint8_t* p, int64_t bytes, int64_t avail, __m512i table,
                                                    __m512i* u) {
    const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
    // A tail chunk's bytes past the row's codes (the next row's) meet activation codes 0 in
    // the panel; at the matrix's end the load is masked.
    const __m512i codes = avail >= 64 ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi8(~uint64_t{0} >> (64 - bytes), p);
    u[0] = _mm512_shuffle_epi8(table, _mm512_and_si512(codes, low_nibbles));
    u[1] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(codes, 4), low_nibbles));
  }
};

}  // namespace

void lut_q8_rows_avx512vnni(const LutQ8Batch& b, int64_t row0, int64_t row1) { lut_q8_rows<Codes4>(b, row0, row1); }

}  // namespace fsq::cpu
