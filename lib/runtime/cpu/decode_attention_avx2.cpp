// AVX2 decode attention (compiled with -mavx2 -mfma -mf16c; see decode_attention_simd.h).
#include "runtime/cpu/decode_attention_simd.h"
#include "runtime/cpu/simd_avx2.h"

namespace fsq::cpu {
namespace {

struct Avx2Attention : avx2::VecOps {
  static constexpr int kKeyBlock = 2;  // 16 registers: 4 heads x 2 keys of accumulators
  static Vec sub(Vec a, Vec b) { return _mm256_sub_ps(a, b); }
  static Vec max(Vec a, Vec b) { return _mm256_max_ps(a, b); }
  static float reduce_max(Vec v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
  }
  // The lane sums of v[0] and v[1] into out[0..1].
  static void reduce_add_block(const Vec v[2], float out[2]) {
    const __m256 h = _mm256_hadd_ps(v[0], v[1]);  // per 128-bit half: v0 pairs, v1 pairs
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_hadd_ps(s, s);  // lanes 0, 1: v0's sum, v1's sum
    _mm_storel_pi(reinterpret_cast<__m64*>(out), s);
  }
};

}  // namespace

void decode_attention_avx2(const DecodeAttentionArgs& args) { decode_attention_simd<Avx2Attention>(args); }

}  // namespace fsq::cpu
