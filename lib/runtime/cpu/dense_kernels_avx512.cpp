// AVX-512 dense GEMV rows (compiled with -mavx512f -mavx512bw ...; see dense_simd_loops.h):
// f32 weights, and bf16/f16 weights widened in registers.
#include "runtime/cpu/dense_simd_loops.h"
#include "runtime/cpu/simd_avx512.h"

namespace fsq::cpu {
namespace {

using Avx512Dense = avx512::VecOps;  // the dense loop needs no operations of its own

// bf16 is the top half of an f32: zero-extend to 32 bits and shift into place.
struct Bf16Loads {
  using Elem = uint16_t;
  static __m512 widen(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
  static __m512 load(const uint16_t* p) { return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static __m512 load_partial(const uint16_t* p, int n) {
    return widen(_mm256_maskz_loadu_epi16(static_cast<__mmask16>((1u << n) - 1), p));
  }
};

struct F16Loads {
  using Elem = uint16_t;
  static __m512 load(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static __m512 load_partial(const uint16_t* p, int n) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(static_cast<__mmask16>((1u << n) - 1), p));
  }
};

}  // namespace

void dense_rows_avx512(const DenseBatch& batch, int64_t row0, int64_t row1) {
  dense_rows_simd<Avx512Dense>(batch, row0, row1);
}

void dense16_rows_avx512(const Dense16Batch& batch, int64_t row0, int64_t row1) {
  if (batch.w->format == HalfFormat::BF16)
    dense_rows_simd<Avx512Dense, Bf16Loads>(batch, row0, row1);
  else
    dense_rows_simd<Avx512Dense, F16Loads>(batch, row0, row1);
}

}  // namespace fsq::cpu
