// AVX2 variant of the uniform kernels: 8 lanes. Compiled with -mavx2 -mfma -mf16c
// (lib/runtime/CMakeLists.txt); called only when cpu_supports(CpuIsa::Avx2). Keep the
// includes minimal (uniform_isa.h says why). Codes are widened to 32-bit lanes, converted
// to float and scaled (AVX2 has no 16-entry float lookup).
#include <immintrin.h>

#include <cstdint>

#include "runtime/cpu/byte_loads.h"
#include "runtime/cpu/simd_avx2.h"
#include "runtime/cpu/uniform_isa.h"
#include "runtime/cpu/uniform_simd_loops.h"

namespace fsq::cpu {
namespace {

// Codes c0 .. c0 + n - 1 as floats in lanes 0 .. n-1. 8-bit: widen 8 bytes. 2/3/4-bit:
// the chunk's 8 * B bits fit one 32-bit word; broadcast it, shift lane j by j * B, mask.
template <int B>
__m256 codes(const uint8_t* row, int64_t c0, int n) {
  const uint8_t* p = row + ((c0 * B) >> 3);
  if constexpr (B == 8) {
    const __m128i bytes = n == 8 ? _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))
                                 : _mm_cvtsi64_si128(static_cast<long long>(load_bytes(p, n)));
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
  } else {
    const uint64_t bits = n == 8 ? load_fixed<B>(p) : load_bytes(p, (n * B + 7) / 8);
    const __m256i shifts = _mm256_setr_epi32(0, B, 2 * B, 3 * B, 4 * B, 5 * B, 6 * B, 7 * B);
    return _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(bits)), shifts),
                                               _mm256_set1_epi32((1 << B) - 1)));
  }
}

struct Avx2 : avx2::VecOps {

  static void group_params(const uint16_t* scales, const uint8_t* zeros, float implicit_zero, int count,
                           float* scale, float* zero, float* offset) {
    for (int j = 0; j < count; ++j) {
      scale[j] = _cvtsh_ss(scales[j]);
      zero[j] = zeros ? static_cast<float>(zeros[j]) : implicit_zero;
      offset[j] = -(scale[j] * zero[j]);
    }
  }

  struct Group {
    Vec scale, zero, offset;  // w = q * scale + offset, or exactly (q - zero) * scale
  };
  template <int B>
  static Group group(const float& scale, const float& zero, const float& offset) {
    return {_mm256_set1_ps(scale), _mm256_set1_ps(zero), _mm256_set1_ps(offset)};
  }

  template <int B, bool kExact>
  static Vec weights(const uint8_t* row, int64_t c0, int n, const Group& g) {
    const Vec q = codes<B>(row, c0, n);
    return kExact ? _mm256_mul_ps(_mm256_sub_ps(q, g.zero), g.scale) : fmadd(q, g.scale, g.offset);
  }

  template <int B>
  static constexpr int kStepVectors = cpu::kStepVectors<B>;

  // 4-bit: 8 bytes widened to 32-bit lanes; low nibbles (even columns), then high nibbles.
  template <int B>
  static void step_weights(const uint8_t* row, int64_t c0, const Group& g, Vec* w) {
    if constexpr (B == 4) {
      static_assert(kLanes == kAvx2Lanes);
      const __m256i bytes = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + (c0 >> 1))));
      w[0] = fmadd(_mm256_cvtepi32_ps(_mm256_and_si256(bytes, _mm256_set1_epi32(0xF))), g.scale, g.offset);
      w[1] = fmadd(_mm256_cvtepi32_ps(_mm256_srli_epi32(bytes, 4)), g.scale, g.offset);
    } else {
      w[0] = weights<B, false>(row, c0, kLanes, g);
    }
  }
};

}  // namespace

void gemv_rows_avx2(const GemvBatch& b, int64_t row0, int64_t row1) { gemv_rows_simd<Avx2>(b, row0, row1); }

void dequantize_rows_avx2(const UniformWeightsView& w, int64_t row0, int64_t nrows, float* out) {
  dequantize_rows_simd<Avx2>(w, row0, nrows, out);
}

}  // namespace fsq::cpu
