// AVX-512 VNNI + VBMI half of lut_gemv_q8 for 3-bit codes (lut_q8_isa.h; the loop is in
// lut_q8_loops.h), and the 3-bit row unpacking, LUT and uniform, of the q8 prefill GEMM's
// tiles (q8_tile_unpack.h). Compiled with the AVX-512 flags, -mavx512vnni and -mavx512vbmi
// (lib/runtime/CMakeLists.txt); called only when the CPU has both. Keep the includes
// minimal (uniform_isa.h says why).
//
// The GEMV reads the codes in bit planes when it has them (LutQ8Tables::codes3, Planes3),
// else the packed words (Codes3); the prefill tiles read the packed words: a chunk of 24
// code bytes, 64 columns in order, spread to bytes (codes3_avx512vbmi.h) and after masking
// to 3 bits looked up by one vpshufb.
#include "runtime/cpu/codes3_avx512vbmi.h"
#include "runtime/cpu/lut_q8_loops.h"
#include "runtime/cpu/q8_tile_unpack.h"

namespace fsq::cpu {
namespace {

// The GEMV's chunks from the packed words (LutQ8Tables::codes3 null): 24 code bytes, 64
// columns in order against the 8-bit panel, spread to bytes (codes3_avx512vbmi.h) and looked
// up by one vpermb in the row's 8 entries repeated 8 times (vpermb reads an index's low 6
// bits, so the next codes' bits above the low 3 need no mask): three shuffles per 64 columns.
// bench_lut_kernels lut3q8 m1, 1 thread, 6 alternated runs on a noisy VM: best 354 -> 341 us
// at 4096x4096, 914 -> 846 us at 11008x4096 against mask and vpshufb.
struct Codes3 {
  static constexpr int kDots = 1;
  static constexpr int64_t kChunkCols = kCodes3ChunkCols, kChunkBytes = kCodes3ChunkCols * 3 / 8;
  using Table = __m512i;
  static LutQ8Codes codes(const LutQ8Batch& b) { return lut_q8_packed_codes(b); }
  static int64_t tail_bytes(int64_t cols) { return ((cols % kChunkCols) * 3 + 7) / 8; }
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

// vpmultishiftqb's bit offsets: output byte 8 j + k (column 2 (8 j + k) + half of the chunk)
// takes its low bits from qword j of the broadcast planes at 32 half + 16 (j / 4) + 2 k, in
// a last chunk of at most 64 columns (2 qwords) at 32 half + 16 ((j / 2) % 2) + 2 k.
struct Planes3Select {
  alignas(64) uint8_t bits[4][64];  // even, odd, last-chunk even, last-chunk odd
  constexpr Planes3Select() : bits{} {
    for (int v = 0; v < 4; ++v)
      for (int j = 0; j < 8; ++j)
        for (int k = 0; k < 8; ++k)
          bits[v][8 * j + k] = static_cast<uint8_t>(32 * (v % 2) + 16 * (v < 2 ? j / 4 : (j / 2) % 2) + 2 * k);
  }
};
alignas(64) constexpr Planes3Select kPlanes3SelectTable;
constexpr const uint8_t (&kPlanes3Select)[4][64] = kPlanes3SelectTable.bits;

// The GEMV's chunks: 128 columns in bit planes (prepare_lut_q8_codes3), the even and the odd
// columns as the 4-bit panel holds them. The low-2-bit qwords are broadcast to both halves of
// a register, so one vpmultishiftqb per 64 columns puts each column's low bits at the bottom
// of its byte (the next columns' bits above, which the lookup ignores); vpermb looks those up
// in the row's entries 0-3 (repeated, so only the low 2 bits count), and a second vpermb,
// under the high bits as a byte mask, in entries 4-7. Three shuffles per 64 columns as with
// the packed words (Codes3), but no spreading load and, with the 4-bit panel's lanes, one
// conversion and FMA of the lane sums per 128 columns instead of per 64: 5 vector
// instructions per 64 columns and row of x instead of 6. Not yet timed on an AVX-512
// machine: bench_lut_kernels times both (lut3q8bp, lut3q8).
struct Planes3 {
  static constexpr int kDots = 2;
  static constexpr int64_t kChunkCols = 128, kChunkBytes = 48;
  struct Table {
    __m512i low, high;  // entries 0-3 and 4-7, each repeated through the register
  };
  static LutQ8Codes codes(const LutQ8Batch& b) {
    const int64_t row_bytes = lut_q8_codes3_row_bytes(b.w->cols);
    return {b.t->codes3, row_bytes, b.t->codes3 + b.w->rows * row_bytes};
  }
  static int64_t tail_bytes(int64_t cols) {
    const int64_t rest = cols % kChunkCols;
    return rest == 0 ? 0 : rest <= 64 ? 24 : 48;
  }
  __attribute__((always_inline)) static Table table(const uint8_t* t) {
    uint32_t low, high;
    __builtin_memcpy(&low, t, 4);
    __builtin_memcpy(&high, t + 4, 4);
    return {_mm512_set1_epi32(static_cast<int>(low)), _mm512_set1_epi32(static_cast<int>(high))};
  }
  __attribute__((always_inline)) static __m512i look_up(__m512i low_bits, __mmask64 high_bits, const Table& t) {
    return _mm512_mask_permutexvar_epi8(_mm512_permutexvar_epi8(low_bits, t.low), high_bits, low_bits, t.high);
  }
  __attribute__((always_inline)) static void decode(const uint8_t* p, int64_t bytes, int64_t /*avail*/,
                                                    const Table& table, __m512i* u) {
    const __m512i even = _mm512_load_si512(kPlanes3Select[0]), odd = _mm512_load_si512(kPlanes3Select[1]);
    const __m512i tail_even = _mm512_load_si512(kPlanes3Select[2]), tail_odd = _mm512_load_si512(kPlanes3Select[3]);
    if (bytes == kChunkBytes) {
      const __m512i planes = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
      uint64_t high[2];
      __builtin_memcpy(high, p + 32, 16);
      u[0] = look_up(_mm512_multishift_epi64_epi8(even, planes), _cvtu64_mask64(high[0]), table);
      u[1] = look_up(_mm512_multishift_epi64_epi8(odd, planes), _cvtu64_mask64(high[1]), table);
    } else {
      const __m512i planes = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
      uint32_t high[2];
      __builtin_memcpy(high, p + 16, 8);
      u[0] = look_up(_mm512_multishift_epi64_epi8(tail_even, planes), _cvtu64_mask64(high[0]), table);
      u[1] = look_up(_mm512_multishift_epi64_epi8(tail_odd, planes), _cvtu64_mask64(high[1]), table);
    }
  }
};

// The prefill tiles' chunks, looked up in a table of 16 entries per 128-bit lane (vpshufb's).
__attribute__((always_inline)) inline __m512i lookup_codes3(const uint8_t* p, int64_t bytes, int64_t avail,
                                                            __m512i table16) {
  return _mm512_shuffle_epi8(table16, _mm512_and_si512(spread_codes3(p, bytes, avail), _mm512_set1_epi8(0x07)));
}

}  // namespace

void lut_q8_rows_avx512vbmi(const LutQ8Batch& b, int64_t row0, int64_t row1) {
  if (b.t->codes3 != nullptr)
    lut_q8_rows<Planes3>(b, row0, row1);
  else
    lut_q8_rows<Codes3>(b, row0, row1);
}

namespace {

static_assert(kCodes3ChunkCols == kTileStepCols, "a tile step is one 3-bit chunk");

// The step's 3-bit codes looked up in `table` (the identity for uniform codes). The codes of
// 3-bit uniform and LUT matrices are packed alike (packed_code.h).
__m512i decode_step3(const uint8_t* row_bytes, int64_t k, int64_t count, const uint8_t* end, __m512i table) {
  constexpr int64_t kChunkBytes = kCodes3ChunkCols * 3 / 8;
  const uint8_t* p = row_bytes + k / kCodes3ChunkCols * kChunkBytes;
  return lookup_codes3(p, (count * 3 + 7) / 8, end - p, table);
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
