// AVX-512 VNNI + VBMI half of uniform_gemv_q8 for 3-bit codes (uniform_q8_isa.h has the
// layout; the loop is in uniform_q8_loops.h). Compiled with the AVX-512 flags, -mavx512vnni
// and -mavx512vbmi (lib/runtime/CMakeLists.txt); called only when the CPU has both. Keep
// the includes minimal (uniform_isa.h says why).
//
// A chunk is 24 code bytes, 64 columns in order (the panel's 8-bit layout), spread to bytes
// (codes3_avx512vbmi.h) and masked to 3 bits: one vpdpbusd per chunk. The float GEMV spends
// a shuffle, a shift, a conversion and an FMA per 16 codes and held LLaMA-7B shapes at about
// 30 % of the read bandwidth of one core.
#include "runtime/cpu/codes3_avx512vbmi.h"
#include "runtime/cpu/uniform_q8_loops.h"

namespace fsq::cpu {
namespace {

struct Codes3 {
  static constexpr int kBits = 3, kDots = 1;
  static constexpr int64_t kChunkCols = kCodes3ChunkCols;
  __attribute__((always_inline)) static void decode(const uint8_t* p, int64_t bytes, int64_t avail, __m512i* out) {
    out[0] = _mm512_and_si512(spread_codes3(p, bytes, avail), _mm512_set1_epi8(0x07));
  }
};

static_assert(Codes3::kChunkCols == q8_chunk_cols(3), "the panel's chunks (uniform_q8_isa.h)");

}  // namespace

void q8_rows_avx512vbmi(const Q8Batch& b, int64_t row0, int64_t row1) { q8_rows<Codes3>(b, row0, row1); }

}  // namespace fsq::cpu
