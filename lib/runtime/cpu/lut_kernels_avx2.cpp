// AVX2 variant of the LUT kernels: 8 lanes. Compiled with -mavx2 -mfma -mf16c
// (lib/runtime/CMakeLists.txt); called only when cpu_supports(CpuIsa::Avx2). Keep the
// includes minimal (uniform_isa.h says why).
//
// A row's table is two ymm of 8 centroids (3-bit: one). vpermps (_mm256_permutevar8x32_ps)
// reads the low 3 bits of each index: a 3-bit code is one lookup, a 4-bit code two lookups
// and a blend on bit 3. 4-bit blocks: one 32-byte load holds 64 codes, lane j's word the
// codes 8j .. 8j + 7; vector s is that load shifted right by 4s (the panel matches,
// lut_isa.h). 3-bit: each 8 codes (3 bytes) broadcast to all lanes and shifted per lane.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "runtime/cpu/byte_loads.h"
#include "runtime/cpu/lut_isa.h"
#include "runtime/cpu/lut_simd_loops.h"
#include "runtime/cpu/simd_avx2.h"

namespace fsq::cpu {
namespace {

int32_t load_word(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

struct Table16 {
  __m256 low, high;  // centroids 0..7 and 8..15 (3-bit: high unused)
};

struct Avx2 : avx2::VecOps {
  using Table = Table16;
  static constexpr int64_t kBlockOverread = 1;  // block<3> reads 4 bytes for the last 8 codes' 3
  static constexpr bool kHalfBlock4 = false;  // lut_isa.h: 16 lanes only
  static void half_block4(const uint8_t*, const Table&, Vec*) {}

  // 8 nonzeros at a time: columns widened, x gathered, values converted; the rest one by one.
  static __m256i columns(const uint16_t* c) {
    return _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c)));
  }
  static __m256i columns(const int32_t* c) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c)); }
  template <typename Col>
  static float sparse_dot(const float* x, const Col* col, const uint16_t* val, int64_t count) {
    Vec acc = _mm256_setzero_ps();
    int64_t e = 0;
    for (; e + kLanes <= count; e += kLanes) {
      const Vec v = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(val + e)));
      acc = _mm256_fmadd_ps(_mm256_i32gather_ps(x, columns(col + e), 4), v, acc);
    }
    float s = reduce_add(acc);
    for (; e < count; ++e) s += x[col[e]] * _cvtsh_ss(val[e]);
    return s;
  }

  template <int B>
  static Table table(const uint16_t* lut) {
    Table t;
    t.low = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(lut)));
    t.high = B == 4 ? _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(lut + 8))) : t.low;
    return t;
  }

  // Lane j: table entry (index_j mod 2^B); bits of index_j above those are ignored.
  template <int B>
  static Vec lookup(__m256i index, const Table& t) {
    const Vec low = _mm256_permutevar8x32_ps(t.low, index);
    if constexpr (B == 3) return low;
    const Vec high = _mm256_permutevar8x32_ps(t.high, index);
    return _mm256_blendv_ps(low, high, _mm256_castsi256_ps(_mm256_slli_epi32(index, 28)));  // on bit 3
  }

  template <int B>
  static void block(const uint8_t* p, const Table& t, Vec* w) {
    if constexpr (B == 4) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
      w[0] = lookup<4>(v, t);
      w[1] = lookup<4>(_mm256_srli_epi32(v, 4), t);
      w[2] = lookup<4>(_mm256_srli_epi32(v, 8), t);
      w[3] = lookup<4>(_mm256_srli_epi32(v, 12), t);
      w[4] = lookup<4>(_mm256_srli_epi32(v, 16), t);
      w[5] = lookup<4>(_mm256_srli_epi32(v, 20), t);
      w[6] = lookup<4>(_mm256_srli_epi32(v, 24), t);
      w[7] = lookup<4>(_mm256_srli_epi32(v, 28), t);
    } else {
      const __m256i shifts = _mm256_setr_epi32(0, 3, 6, 9, 12, 15, 18, 21);
      for (int s = 0; s < 8; ++s)  // 8 codes, 3 bytes, each (4 bytes read)
        w[s] = lookup<3>(_mm256_srlv_epi32(_mm256_set1_epi32(load_word(p + 3 * s)), shifts), t);
    }
  }

  template <int B>
  static Vec weights(const uint8_t* p, int n, int64_t avail, const Table& t) {
    const int64_t need = (int64_t{n} * B + 7) / 8;
    const auto bits = static_cast<uint32_t>(n == kLanes && avail >= 4 ? load_bytes(p, 4) : load_bytes(p, need));
    const __m256i shifts = _mm256_setr_epi32(0, B, 2 * B, 3 * B, 4 * B, 5 * B, 6 * B, 7 * B);
    return lookup<B>(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int32_t>(bits)), shifts), t);
  }
};

}  // namespace

void lut_gemv_rows_avx2(const LutGemvBatch& b, int64_t row0, int64_t row1) { gemv_rows_simd<Avx2>(b, row0, row1); }

void lut_dequantize_rows_avx2(const LutWeightsView& w, int64_t row0, int64_t nrows, float* out) {
  dequantize_rows_simd<Avx2>(w, row0, nrows, out);
}

}  // namespace fsq::cpu
