// AVX-512 decode attention (compiled with the AVX-512 flags; see decode_attention_simd.h).
#include "runtime/cpu/decode_attention_simd.h"
#include "runtime/cpu/simd_avx512.h"

namespace fsq::cpu {
namespace {

struct Avx512Attention : avx512::VecOps {
  static Vec load_partial(const float* p, int n) { return _mm512_maskz_loadu_ps(first_lanes(n), p); }
  static Vec set1(float v) { return _mm512_set1_ps(v); }
};

}  // namespace

void decode_attention_avx512(const DecodeAttentionArgs& args) { decode_attention_simd<Avx512Attention>(args); }

}  // namespace fsq::cpu
