// AVX-512 silu_mul (compiled with the AVX-512 flags; the loop: silu_simd.h).
#include "runtime/cpu/silu_isa.h"
#include "runtime/cpu/silu_simd.h"
#include "runtime/cpu/simd_avx512.h"

namespace fsq::cpu {
namespace {

struct Avx512Silu : avx512::VecOps {
  static Vec mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
  static Vec neg_abs(Vec v) {  // the sign bit set (vorps on zmm needs AVX-512DQ)
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(v), _mm512_set1_epi32(INT32_MIN)));
  }
  // a where v >= 0, else b (NaN: b).
  static Vec select_nonnegative(Vec v, Vec a, Vec b) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GE_OQ), b, a);
  }
};

}  // namespace

void silu_mul_avx512(float* gate, const float* up, int64_t n) { silu_mul_loop<Avx512Silu>(gate, up, n); }

}  // namespace fsq::cpu
