// AVX2 decode attention (compiled with -mavx2 -mfma -mf16c; see decode_attention_simd.h).
#include "runtime/cpu/decode_attention_simd.h"
#include "runtime/cpu/simd_avx2.h"

namespace fsq::cpu {
namespace {

struct Avx2Attention : avx2::VecOps {
  static Vec load_partial(const float* p, int n) { return _mm256_maskload_ps(p, first_lanes(n)); }
  static Vec set1(float v) { return _mm256_set1_ps(v); }
};

}  // namespace

void decode_attention_avx2(const DecodeAttentionArgs& args) { decode_attention_simd<Avx2Attention>(args); }

}  // namespace fsq::cpu
