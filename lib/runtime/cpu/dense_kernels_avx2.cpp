// AVX2 dense GEMV rows (compiled with -mavx2 -mfma -mf16c; see dense_simd_loops.h): f32
// weights, and bf16/f16 weights widened in registers.
#include <cstring>

#include "runtime/cpu/dense_simd_loops.h"
#include "runtime/cpu/simd_avx2.h"

namespace fsq::cpu {
namespace {

using Avx2Dense = avx2::VecOps;  // the dense loop needs no operations of its own

// The last, partial vector of a row: AVX2 has no masked 16-bit load, so copy its n values
// into a zeroed block (once per row; the rest of the row takes the full loads).
inline __m128i load_first_halves(const uint16_t* p, int n) {
  alignas(16) uint16_t block[8] = {};
  std::memcpy(block, p, static_cast<size_t>(n) * sizeof(uint16_t));
  return _mm_load_si128(reinterpret_cast<const __m128i*>(block));
}

// bf16 is the top half of an f32: zero-extend to 32 bits and shift into place.
struct Bf16Loads {
  using Elem = uint16_t;
  static __m256 widen(__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }
  static __m256 load(const uint16_t* p) { return widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static __m256 load_partial(const uint16_t* p, int n) { return widen(load_first_halves(p, n)); }
};

struct F16Loads {
  using Elem = uint16_t;
  static __m256 load(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static __m256 load_partial(const uint16_t* p, int n) { return _mm256_cvtph_ps(load_first_halves(p, n)); }
};

}  // namespace

void dense_rows_avx2(const DenseBatch& batch, int64_t row0, int64_t row1) {
  dense_rows_simd<Avx2Dense>(batch, row0, row1);
}

void dense16_rows_avx2(const Dense16Batch& batch, int64_t row0, int64_t row1) {
  if (batch.w->format == HalfFormat::BF16)
    dense_rows_simd<Avx2Dense, Bf16Loads>(batch, row0, row1);
  else
    dense_rows_simd<Avx2Dense, F16Loads>(batch, row0, row1);
}

}  // namespace fsq::cpu
