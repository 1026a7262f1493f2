// AVX-512 VNNI + VBMI half of lut_gemv_q8 for 3-bit codes (lut_q8_isa.h; the loop is in
// lut_q8_loops.h), and the 3-bit row unpacking, LUT and uniform, of the q8 prefill GEMM's
// tiles (q8_tile_unpack.h). Compiled with the AVX-512 flags, -mavx512vnni and -mavx512vbmi
// (lib/runtime/CMakeLists.txt); called only when the CPU has both. Keep the includes
// minimal (uniform_isa.h says why).
//
// A chunk is 24 code bytes, 64 columns in order, spread to bytes (codes3_avx512vbmi.h), and
// after masking to 3 bits one vpshufb looks them up in the row's table.
#include "runtime/cpu/codes3_avx512vbmi.h"
#include "runtime/cpu/lut_q8_loops.h"
#include "runtime/cpu/q8_tile_unpack.h"

namespace fsq::cpu {
namespace {

// The GEMV's chunks: the row's 8 entries repeated 8 times, so that vpermb, which reads an
// index's low 6 bits, looks up the low 3 bits of each spread byte (the next codes' bits
// above them) with no mask: one instruction less per 64 columns of a row than mask and
// vpshufb. bench_lut_kernels lut3q8 m1, 1 thread, 6 alternated runs on a noisy VM: best
// 354 -> 341 us at 4096x4096, 914 -> 846 us at 11008x4096.
struct Codes3 {
  static constexpr int kBits = 3, kDots = 1;
  static constexpr int64_t kChunkCols = kCodes3ChunkCols;
  __attribute__((always_inline)) static __m512i table(const uint8_t* t) {
    uint64_t entries;
    __builtin_memcpy(&entries, t, sizeof entries);
    return _mm512_set1_epi64(static_cast<long long>(entries));
  }
  __attribute__((always_inline)) static void decode(const uint8_t* p, int64_t bytes, int64_t avail, __m512i table,
                                                    __m512i* u) {
    u[0] = _mm512_permutexvar_epi8(spread_codes3(p, bytes, avail), table);
  }
};

// The prefill tiles' chunks, looked up in a table of 16 entries per 128-bit lane (vpshufb's).
__attribute__((always_inline)) inline __m512i lookup_codes3(const uint8_t* p, int64_t bytes, int64_t avail,
                                                            __m512i table16) {
  return _mm512_shuffle_epi8(table16, _mm512_and_si512(spread_codes3(p, bytes, avail), _mm512_set1_epi8(0x07)));
}

}  // namespace

void lut_q8_rows_avx512vbmi(const LutQ8Batch& b, int64_t row0, int64_t row1) { lut_q8_rows<Codes3>(b, row0, row1); }

namespace {

static_assert(Codes3::kChunkCols == kTileStepCols, "a tile step is one 3-bit chunk");

// The step's 3-bit codes looked up in `table` (the identity for uniform codes). The codes of
// 3-bit uniform and LUT matrices are packed alike (packed_code.h).
__m512i decode_step3(const uint8_t* row_bytes, int64_t k, int64_t count, const uint8_t* end, __m512i table) {
  constexpr int64_t kChunkBytes = Codes3::kChunkCols * Codes3::kBits / 8;
  const uint8_t* p = row_bytes + k / Codes3::kChunkCols * kChunkBytes;
  return lookup_codes3(p, (count * Codes3::kBits + 7) / 8, end - p, table);
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
