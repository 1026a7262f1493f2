// AVX-512 decode attention (compiled with the AVX-512 flags; see decode_attention_simd.h).
#include "runtime/cpu/decode_attention_simd.h"
#include "runtime/cpu/reduce4_avx512.h"
#include "runtime/cpu/simd_avx512.h"

namespace fsq::cpu {
namespace {

struct Avx512Attention : avx512::VecOps {
  static constexpr int kKeyBlock = 4;
  static Vec sub(Vec a, Vec b) { return _mm512_sub_ps(a, b); }
  static Vec max(Vec a, Vec b) { return _mm512_max_ps(a, b); }
  static float reduce_max(Vec v) { return _mm512_reduce_max_ps(v); }
  // The lane sums of v[0..3] into out[0..3]: one transposing reduction.
  static void reduce_add_block(const Vec v[4], float out[4]) { _mm_storeu_ps(out, reduce_add4_avx512(v)); }
};

}  // namespace

void decode_attention_avx512(const DecodeAttentionArgs& args) { decode_attention_simd<Avx512Attention>(args); }

}  // namespace fsq::cpu
