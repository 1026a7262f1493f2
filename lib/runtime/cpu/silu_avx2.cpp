// AVX2 silu_mul (compiled with -mavx2 -mfma -mf16c; the loop: silu_simd.h).
#include "runtime/cpu/silu_isa.h"
#include "runtime/cpu/silu_simd.h"
#include "runtime/cpu/simd_avx2.h"

namespace fsq::cpu {
namespace {

struct Avx2Silu : avx2::VecOps {
  static Vec mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
  static Vec neg_abs(Vec v) { return _mm256_or_ps(v, _mm256_set1_ps(-0.0f)); }
  // a where v >= 0, else b (NaN: b).
  static Vec select_nonnegative(Vec v, Vec a, Vec b) {
    return _mm256_blendv_ps(b, a, _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GE_OQ));
  }
};

}  // namespace

void silu_mul_avx2(float* gate, const float* up, int64_t n) { silu_mul_loop<Avx2Silu>(gate, up, n); }

}  // namespace fsq::cpu
