// AVX-512 VNNI half of lut_gemv_q8 (lut_q8_isa.h). Compiled with the AVX-512 flags and
// -mavx512vnni (lib/runtime/CMakeLists.txt); called only when cpu_has_avx512_vnni(). Keep
// the includes minimal (uniform_isa.h says why).
//
// Per chunk of 64 code bytes (128 columns) and weight row: the low and the high nibbles
// looked up in the row's int8 table (one vpshufb each: the 16 entries repeat in every
// 128-bit lane), then per row of x two vpdpbusd against the panel's even and odd columns,
// the 16 int32 lane sums converted to float and scaled by their activation blocks' d. The
// table's bias of 128 is taken off once per row (128 * sum_b d[b] * sum of codes), then the
// row's scale applied. R weight rows run together, sharing the loads of x (SmolLM2's rows
// are 4.5 chunks long). The CSR part goes in a pass of its own, as in lut_gemv.
#include <immintrin.h>

#include <cstdint>

#include "runtime/cpu/lut_avx512_ops.h"
#include "runtime/cpu/lut_q8_isa.h"
#include "runtime/cpu/prefetch.h"
#include "runtime/cpu/uniform_q8_isa.h"  // kQ8ChunkBytes, kQ8ChunkLanes

namespace fsq::cpu {
namespace {

// Codes are prefetched about this far ahead, one line per line read (as the uniform q8 GEMV).
constexpr int64_t kPrefetchBytes = 8192;
constexpr float kTableBias = 128.0f;

struct RowsContext {
  const LutQ8Batch* b = nullptr;
  int64_t full_chunks = 0, tail_bytes = 0, row_bytes = 0, ahead_rows = 0, ahead_bytes = 0;
  __mmask64 tail_mask = 0;
};

// Output rows n .. n + R - 1 for all M rows of x, dense part.
template <int M, int R>
__attribute__((always_inline)) inline void row_block(const RowsContext& ctx, int64_t n) {
  const LutQ8Batch& b = *ctx.b;
  const LutWeightsView& w = *b.w;
  const auto* rows = reinterpret_cast<const uint8_t*>(w.words + n * w.words_per_row);
  const bool prefetch = n + R - 1 + ctx.ahead_rows < w.rows;
  __m512i table[R];
  __m512 acc[R][M];
  for (int r = 0; r < R; ++r) {
    table[r] = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.t->tables + (n + r) * 16)));
    for (int i = 0; i < M; ++i) acc[r][i] = _mm512_setzero_ps();
  }
  const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
  const auto chunk = [&](int64_t c, bool tail) __attribute__((always_inline)) {
    __m512i even[R], odd[R];
    for (int r = 0; r < R; ++r) {
      const uint8_t* p = rows + r * ctx.row_bytes + c * kQ8ChunkBytes;
      const __m512i bytes = tail ? _mm512_maskz_loadu_epi8(ctx.tail_mask, p) : _mm512_loadu_si512(p);
      if (prefetch) prefetch_streamed(p + ctx.ahead_bytes);
      even[r] = _mm512_shuffle_epi8(table[r], _mm512_and_si512(bytes, low_nibbles));
      odd[r] = _mm512_shuffle_epi8(table[r], _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low_nibbles));
    }
    for (int i = 0; i < M; ++i) {
      const int8_t* x = b.codes + i * b.codes_stride + c * 2 * kQ8ChunkBytes;
      const __m512i x0 = _mm512_loadu_si512(x), x1 = _mm512_loadu_si512(x + kQ8ChunkBytes);
      const __m512 lane_scales = _mm512_loadu_ps(b.lane_scales + i * b.lane_scales_stride + c * kQ8ChunkLanes);
      for (int r = 0; r < R; ++r) {
        const __m512i dot = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), even[r], x0), odd[r], x1);
        acc[r][i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), lane_scales, acc[r][i]);
      }
    }
  };
  for (int64_t c = 0; c < ctx.full_chunks; ++c) chunk(c, false);
  if (ctx.tail_bytes != 0) chunk(ctx.full_chunks, true);
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < M; ++i) {
      const float dense = _mm512_reduce_add_ps(acc[r][i]) - kTableBias * b.row_sums[i * b.row_sums_stride];
      b.y[i * b.y_stride + n + r] = b.t->scales[n + r] * dense;
    }
}

template <int M, typename Col>
void sparse_rows(const LutQ8Batch& b, const Col* col, int64_t row0, int64_t row1) {
  const LutWeightsView& w = *b.w;
  for (int64_t n = row0; n < row1; ++n) {
    const int64_t begin = w.row_ptr[n], count = w.row_ptr[n + 1] - begin;
    if (count == 0) continue;
    for (int i = 0; i < M; ++i)
      b.y[i * b.y_stride + n] += Avx512::sparse_dot(b.x + i * b.x_stride, col + begin, w.val + begin, count);
  }
}

template <int M>
void rows_m(const LutQ8Batch& b, int64_t row0, int64_t row1) {
  constexpr int64_t kChunkCols = 2 * kQ8ChunkBytes;  // 4-bit codes
  // Rows per block: enough accumulators in flight for few rows of x, within 32 registers.
  constexpr int R = M <= 2 ? 4 : M <= 4 ? 2 : 1;
  const LutWeightsView& w = *b.w;
  RowsContext ctx;
  ctx.b = &b;
  ctx.full_chunks = w.cols / kChunkCols;
  ctx.tail_bytes = (w.cols % kChunkCols) / 2;
  ctx.tail_mask = ctx.tail_bytes == 0 ? 0 : ~uint64_t{0} >> (64 - ctx.tail_bytes);
  ctx.row_bytes = w.words_per_row * 4;
  // Past the R rows read together: 8 KiB ahead of long rows would still be inside them.
  ctx.ahead_rows = R + (kPrefetchBytes + ctx.row_bytes - 1) / ctx.row_bytes;
  ctx.ahead_bytes = ctx.ahead_rows * ctx.row_bytes;
  int64_t n = row0;
  for (; n + R <= row1; n += R) row_block<M, R>(ctx, n);
  for (; n < row1; ++n) row_block<M, 1>(ctx, n);
  if (w.row_ptr == nullptr) return;
  if (w.col_type == LutColType::I32)
    sparse_rows<M>(b, static_cast<const int32_t*>(w.col), row0, row1);
  else
    sparse_rows<M>(b, static_cast<const uint16_t*>(w.col), row0, row1);
}

}  // namespace

void lut_q8_rows_avx512vnni(const LutQ8Batch& b, int64_t row0, int64_t row1) {
  static_assert(kMaxGemvRows == 8, "one instantiation per batch size below");
  using RowsFn = void (*)(const LutQ8Batch&, int64_t, int64_t);
  constexpr RowsFn by_rows[] = {rows_m<1>, rows_m<2>, rows_m<3>, rows_m<4>, rows_m<5>, rows_m<6>, rows_m<7>, rows_m<8>};
  by_rows[b.m - 1](b, row0, row1);
}

}  // namespace fsq::cpu
