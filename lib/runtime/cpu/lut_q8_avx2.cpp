// AVX2 half of lut_gemv_q8 for 4-bit codes (lut_q8_isa.h), for CPUs without AVX-512 VNNI.
// Compiled with -mavx2 -mfma -mf16c (lib/runtime/CMakeLists.txt); called only when
// cpu_supports(CpuIsa::Avx2). Keep the includes minimal (uniform_isa.h says why).
//
// A chunk is 64 code bytes, 128 columns, taken as two halves of 32 bytes (64 columns, 8
// lanes) against the 4-bit panel (even columns, then odd; q8_panel.h). Per half: the low and
// the high nibbles looked up by one vpshufb each in the row's int8 entries made signed (the
// tables hold t + 128). vpmaddubsw multiplies unsigned by signed bytes, so each row of x
// goes in as |x| with the sign moved onto the entries (vpsignb): pair sums of at most
// 2 * 127 * 127 cannot saturate 16 bits (t + 128 against x could: 2 * 255 * 127). The even
// and the odd pairs are widened to int32 apart (their 16-bit sum could overflow), and each
// lane's sum is scaled by its activation block's d; the row scale last, then the CSR part.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "runtime/cpu/lut_q8_sparse.h"
#include "runtime/cpu/prefetch.h"
#include "runtime/cpu/simd_avx2.h"
#include "runtime/cpu/sparse_dot_chains.h"
#include "runtime/cpu/uniform_q8_isa.h"  // kQ8ChunkBytes, kQ8ChunkLanes, kQ8PrefetchBytes

namespace fsq::cpu {
namespace {

// The CSR part's arithmetic (lut_q8_sparse.h): four FMA chains per row, as the AVX-512
// file's rows of fewer than 64 nonzeros.
struct SparseOps : avx2::VecOps {
  template <typename Col>
  static float sparse_dot(const float* x, const Col* col, const uint16_t* val, int64_t count) {
    return sparse_dot_four_chains(x, col, val, count, [](uint16_t h) { return half(h); });
  }
};

constexpr int64_t kChunkCols = 128, kChunkBytes = 64, kHalfBytes = 32, kHalfLanes = 8;

// Row n's 16 entries as signed bytes, in both 128-bit lanes (vpshufb's table).
__attribute__((always_inline)) inline __m256i signed_table(const uint8_t* t) {
  const __m128i biased = _mm_loadu_si128(reinterpret_cast<const __m128i*>(t));
  return _mm256_broadcastsi128_si256(_mm_xor_si128(biased, _mm_set1_epi8(static_cast<char>(0x80))));
}

struct RowsContext {
  const LutQ8Batch* b = nullptr;
  int64_t full_chunks = 0, tail_bytes = 0, row_bytes = 0, ahead_bytes = 0, ahead_rows = 0;
  int64_t tail_load_bytes = 0;    // what the tail chunk's halves load: 32 or 64
  const uint8_t* end = nullptr;  // one past the matrix's last code byte
};

// Output rows n .. n + R - 1 for all M rows of x, dense part.
template <int M, int R>
__attribute__((always_inline)) inline void row_block(const RowsContext& ctx, int64_t n) {
  const LutQ8Batch& b = *ctx.b;
  const LutWeightsView& w = *b.w;
  const auto* rows = reinterpret_cast<const uint8_t*>(w.words + n * w.words_per_row);
  const bool prefetch = n + R - 1 + ctx.ahead_rows < w.rows;
  const __m256i low_nibbles = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  __m256i table[R];
  __m256 acc[R][M];
  for (int r = 0; r < R; ++r) {
    table[r] = signed_table(b.t->tables + (n + r) * 16);
    for (int i = 0; i < M; ++i) acc[r][i] = _mm256_setzero_ps();
  }
  // Half h of chunk c, its code bytes of row r at code[r].
  const auto half = [&](int64_t c, int h, const uint8_t* const* code) __attribute__((always_inline)) {
    __m256i even[R], odd[R];
    for (int r = 0; r < R; ++r) {
      const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(code[r]));
      even[r] = _mm256_shuffle_epi8(table[r], _mm256_and_si256(bytes, low_nibbles));
      odd[r] = _mm256_shuffle_epi8(table[r], _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low_nibbles));
    }
    for (int i = 0; i < M; ++i) {
      const int8_t* x = b.q8.codes + i * b.q8.codes_stride + c * 2 * kQ8ChunkBytes + h * kHalfBytes;
      const __m256i x_even = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x));
      const __m256i x_odd = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + kQ8ChunkBytes));
      const __m256i abs_even = _mm256_abs_epi8(x_even), abs_odd = _mm256_abs_epi8(x_odd);
      const __m256 lane_scales =
          _mm256_loadu_ps(b.q8.lane_scales + i * b.q8.lane_scales_stride + c * kQ8ChunkLanes + h * kHalfLanes);
      for (int r = 0; r < R; ++r) {
        const __m256i pairs_even = _mm256_maddubs_epi16(abs_even, _mm256_sign_epi8(even[r], x_even));
        const __m256i pairs_odd = _mm256_maddubs_epi16(abs_odd, _mm256_sign_epi8(odd[r], x_odd));
        const __m256i dot = _mm256_add_epi32(_mm256_madd_epi16(pairs_even, ones), _mm256_madd_epi16(pairs_odd, ones));
        acc[r][i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), lane_scales, acc[r][i]);
      }
    }
  };
  int64_t c = 0;
  for (; c < ctx.full_chunks; ++c) {
    const uint8_t* code[R];
    for (int r = 0; r < R; ++r) {
      code[r] = rows + r * ctx.row_bytes + c * kChunkBytes;
      if (prefetch) prefetch_to_l2(code[r] + ctx.ahead_bytes);
    }
    half(c, 0, code);
    for (int r = 0; r < R; ++r) code[r] += kHalfBytes;
    half(c, 1, code);
  }
  if (ctx.tail_bytes != 0) {
    // The tail's halves load whole 32 bytes: the codes past the row (the next row's) meet
    // activation codes 0 in the panel. Only where such a load could pass the matrix's end
    // (its last row) are the bytes copied into zeros: a copy on every row (a memcpy call
    // and a stalled load from what it stored) cost the uniform kernel a third of its rate on
    // 576-column rows (uniform_q8_avx2.cpp).
    alignas(32) uint8_t tail[R][kChunkBytes] = {};
    const uint8_t* code[R];
    for (int r = 0; r < R; ++r) {
      code[r] = rows + r * ctx.row_bytes + c * kChunkBytes;
      if (code[r] + ctx.tail_load_bytes > ctx.end) {
        std::memcpy(tail[r], code[r], static_cast<size_t>(ctx.tail_bytes));
        code[r] = tail[r];
      }
    }
    half(c, 0, code);
    if (ctx.tail_bytes > kHalfBytes) {
      for (int r = 0; r < R; ++r) code[r] += kHalfBytes;
      half(c, 1, code);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < M; ++i)
      b.y[i * b.y_stride + n + r] = b.t->scales[n + r] * avx2::VecOps::reduce_add(acc[r][i]);
}

template <int M>
void rows_m(const LutQ8Batch& b, int64_t row0, int64_t row1) {
  // Rows per block: they share the loads of x, within 16 registers.
  constexpr int R = M <= 2 ? 2 : 1;
  const LutWeightsView& w = *b.w;
  RowsContext ctx;
  ctx.b = &b;
  ctx.full_chunks = w.cols / kChunkCols;
  ctx.tail_bytes = (w.cols % kChunkCols) / 2;
  ctx.tail_load_bytes = ctx.tail_bytes > kHalfBytes ? kChunkBytes : kHalfBytes;
  ctx.end = reinterpret_cast<const uint8_t*>(w.words + w.rows * w.words_per_row);
  ctx.row_bytes = w.words_per_row * 4;
  ctx.ahead_rows = R + (kQ8PrefetchBytes + ctx.row_bytes - 1) / ctx.row_bytes;
  ctx.ahead_bytes = ctx.ahead_rows * ctx.row_bytes;
  int64_t n = row0;
  for (; n + R <= row1; n += R) row_block<M, R>(ctx, n);
  for (; n < row1; ++n) row_block<M, 1>(ctx, n);
  lut_q8_sparse<SparseOps, M>(b, row0, row1);
}

}  // namespace

void lut_q8_rows_avx2(const LutQ8Batch& b, int64_t row0, int64_t row1) {
  static_assert(kMaxGemvRows == 8, "one instantiation per batch size below");
  using RowsFn = void (*)(const LutQ8Batch&, int64_t, int64_t);
  constexpr RowsFn by_rows[] = {rows_m<1>, rows_m<2>, rows_m<3>, rows_m<4>, rows_m<5>, rows_m<6>, rows_m<7>, rows_m<8>};
  by_rows[b.m - 1](b, row0, row1);
}

}  // namespace fsq::cpu
