// AVX-512 VNNI half of uniform_gemv_q8 for 4- and 8-bit codes (uniform_q8_isa.h has the
// layout; the loop is in uniform_q8_loops.h). Compiled with the AVX-512 flags and
// -mavx512vnni (lib/runtime/CMakeLists.txt); called only when cpu_has_avx512_vnni(). Keep
// the includes minimal (uniform_isa.h says why).
//
// A chunk is 64 code bytes: 8-bit codes multiply the panel's 64 columns by one vpdpbusd;
// 4-bit codes take two, the low nibbles against the even columns, the high ones against the
// odd columns.
#include "runtime/cpu/uniform_q8_loops.h"

namespace fsq::cpu {
namespace {

// The tail chunk's load is masked to its bytes (a masked load straddling two lines costs
// once per row, not per chunk).
__attribute__((always_inline)) inline __m512i load_chunk(const uint8_t* p, int64_t bytes) {
  return bytes == kQ8ChunkBytes ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi8(~uint64_t{0} >> (64 - bytes), p);
}

struct Codes4 {
  static constexpr int kBits = 4, kDots = 2;
  static constexpr int64_t kChunkCols = 128;
  __attribute__((always_inline)) static void decode(const uint8_t* p, int64_t bytes, int64_t, __m512i* out) {
    const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
    const __m512i codes = load_chunk(p, bytes);
    out[0] = _mm512_and_si512(codes, low_nibbles);
    out[1] = _mm512_and_si512(_mm512_srli_epi16(codes, 4), low_nibbles);
  }
};

struct Codes8 {
  static constexpr int kBits = 8, kDots = 1;
  static constexpr int64_t kChunkCols = 64;
  __attribute__((always_inline)) static void decode(const uint8_t* p, int64_t bytes, int64_t, __m512i* out) {
    out[0] = load_chunk(p, bytes);
  }
};

static_assert(Codes4::kChunkCols == q8_chunk_cols(4) && Codes8::kChunkCols == q8_chunk_cols(8),
              "the panel's chunks (uniform_q8_isa.h)");

}  // namespace

void q8_rows_avx512vnni(const Q8Batch& b, int64_t row0, int64_t row1) {
  if (b.w->bits == 4)
    q8_rows<Codes4>(b, row0, row1);
  else
    q8_rows<Codes8>(b, row0, row1);
}

}  // namespace fsq::cpu
