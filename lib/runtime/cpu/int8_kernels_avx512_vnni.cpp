// AVX-512 VNNI variant of the int8 GEMM: one vpdpbusd multiplies 16 output rows' 4-column
// quads (the prepared weights, biased to unsigned) by x's broadcast quad and adds the
// products into 16 int32 lanes. Compiled with the AVX-512 flags plus -mavx512vnni
// (lib/runtime/CMakeLists.txt); called only when cpu_has_avx512_vnni().
#include <immintrin.h>

#include <cstdint>

#include "runtime/cpu/int8_avx512_tiles.h"
#include "runtime/cpu/int8_isa.h"

namespace fsq::cpu {
namespace {

// Register blocking: MR rows of x times NR blocks of 16 outputs, MR * NR accumulators and NR
// weight vectors out of 32 registers. vpdpbusd has ~5 cycles of latency at 1-2 per cycle,
// so the 24 accumulators of a GEMM tile keep it busy; a GEMV tile (1 row) has NR chains.
constexpr int64_t kGemmRows = 6, kGemmBlocks = 4;
constexpr int64_t kMaxRows = 8;  // GEMV batches up to 8 rows: one tile of them, fewer blocks
constexpr int64_t kWideRowsBlocks = 3;

// acc += the 4-byte dot products of u8 (unsigned) and s8 (signed), per 32-bit lane. In
// asm: with the intrinsic, GCC 12 copied every accumulator to another register (and to the
// stack) around each vpdpbusd of a 6 x 4 tile instead of updating it in place.
FSQ_INT8_INLINE inline __m512i dpbusd(__m512i acc, __m512i u8, __m512i s8) {
  asm("vpdpbusd %[s8], %[u8], %[acc]" : [acc] "+v"(acc) : [u8] "v"(u8), [s8] "v"(s8));
  return acc;
}

template <int MR, int NR>
void tile(const Int8Gemm& g, int64_t i0, int64_t b0) {
  const int64_t quads = g.kp / 4, block_bytes = quads * kInt8QuadBytes;
  const uint8_t* w = g.w + b0 * block_bytes;
  const int8_t* x = g.xq + i0 * g.xq_stride;
  __m512i acc[MR][NR];
  int8_unroll<MR>([&](auto i) FSQ_INT8_INLINE {
    int8_unroll<NR>([&](auto j) FSQ_INT8_INLINE { acc[i][j] = _mm512_setzero_si512(); });
  });
  for (int64_t q = 0; q < quads; ++q) {
    __m512i wv[NR];
    int8_unroll<NR>([&](auto j) FSQ_INT8_INLINE {
      wv[j] = _mm512_loadu_si512(w + j * block_bytes + q * kInt8QuadBytes);
    });
    int8_unroll<MR>([&](auto i) FSQ_INT8_INLINE {
      const __m512i xb = int8_broadcast_quad(x + i * g.xq_stride + 4 * q);
      int8_unroll<NR>([&](auto j) FSQ_INT8_INLINE { acc[i][j] = dpbusd(acc[i][j], wv[j], xb); });
    });
  }
  // The +128 weight bias added 128 * sum_k x[i, k] to each sum (exact, modulo 2^32).
  __m512i sums[MR][NR];
  int8_unroll<MR>([&](auto i) FSQ_INT8_INLINE {
    const __m512i bias = _mm512_set1_epi32(kInt8WeightBias * g.x_sums[i0 + i]);
    int8_unroll<NR>([&](auto j) FSQ_INT8_INLINE { sums[i][j] = _mm512_sub_epi32(acc[i][j], bias); });
  });
  int8_store_tile_avx512(g, i0, b0, MR, NR, &sums[0][0]);
}

using TileFn = void (*)(const Int8Gemm& g, int64_t i0, int64_t b0);
#define FSQ_INT8_TILES(r) {tile<r, 1>, tile<r, 2>, tile<r, 3>, tile<r, 4>}
#define FSQ_INT8_TILES_WIDE(r) {tile<r, 1>, tile<r, 2>, tile<r, 3>, nullptr}  // 32 accumulators would spill
constexpr TileFn kTiles[kMaxRows][kGemmBlocks] = {FSQ_INT8_TILES(1), FSQ_INT8_TILES(2), FSQ_INT8_TILES(3),
                                                   FSQ_INT8_TILES(4), FSQ_INT8_TILES(5), FSQ_INT8_TILES(6),
                                                   FSQ_INT8_TILES_WIDE(7), FSQ_INT8_TILES_WIDE(8)};
#undef FSQ_INT8_TILES
#undef FSQ_INT8_TILES_WIDE

}  // namespace

void int8_tiles_avx512vnni(const Int8Gemm& g, int64_t i0, int64_t i1, int64_t b0, int64_t b1) {
  const int64_t m = i1 - i0;
  const int64_t mr = m <= kMaxRows ? m : kGemmRows;
  const int64_t nr = mr <= kGemmRows ? kGemmBlocks : kWideRowsBlocks;
  int8_for_each_tile(i0, i1, b0, b1, mr, nr, [&](int64_t i, int64_t b, int64_t rows, int64_t blocks) {
    kTiles[rows - 1][blocks - 1](g, i, b);
  });
}

}  // namespace fsq::cpu
