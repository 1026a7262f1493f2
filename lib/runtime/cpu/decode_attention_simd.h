// The SIMD decode attention shared by decode_attention_avx2.cpp and _avx512.cpp, over a
// Simd struct (VecOps plus load_partial). Query heads go in groups of up to kHeadGroup:
// each key row's vectors are loaded once and multiplied with every head of the group, and
// each value row's once and added into every head's output accumulators. expf is libm's
// (a C function: no inline code shared with baseline files).
#pragma once

#include <math.h>

#include <cstdint>

#include "runtime/cpu/decode_attention_isa.h"

namespace fsq::cpu {
namespace {

constexpr int kHeadGroup = 4;

// scores[h, s] = scale * q[h] . k[s] for the G heads from h0.
template <typename Simd, int G>
void group_logits(const DecodeAttentionArgs& a, int64_t h0) {
  using Vec = typename Simd::Vec;
  constexpr int64_t L = Simd::kLanes;
  const int64_t D = a.head_dim, S = a.keys_count;
  for (int64_t s = 0; s < S; ++s) {
    const float* k = a.keys + s * D;
    Vec acc[G];
    for (int g = 0; g < G; ++g) acc[g] = Simd::zero();
    for (int64_t d = 0; d < D; d += L) {
      const int len = static_cast<int>(D - d < L ? D - d : L);
      const Vec kv = len == L ? Simd::load(k + d) : Simd::load_partial(k + d, len);
      for (int g = 0; g < G; ++g) {
        const float* q = a.q + (h0 + g) * D + d;
        acc[g] = Simd::fmadd(len == L ? Simd::load(q) : Simd::load_partial(q, len), kv, acc[g]);
      }
    }
    for (int g = 0; g < G; ++g) a.scores[(h0 + g) * S + s] = Simd::reduce_add(acc[g]) * a.scale;
  }
}

// Row h of scores becomes its softmax weights.
inline void softmax_row(float* p, int64_t S) {
  float top = p[0];
  for (int64_t s = 1; s < S; ++s) top = p[s] > top ? p[s] : top;
  float total = 0.0f;
  for (int64_t s = 0; s < S; ++s) total += (p[s] = expf(p[s] - top));
  for (int64_t s = 0; s < S; ++s) p[s] /= total;
}

// out[h] = sum_s p[h, s] v[s] for the G heads from h0, lanes [d, d + len) at a time.
template <typename Simd, int G>
void group_values(const DecodeAttentionArgs& a, int64_t h0) {
  using Vec = typename Simd::Vec;
  constexpr int64_t L = Simd::kLanes;
  const int64_t D = a.head_dim, S = a.keys_count;
  for (int64_t d = 0; d < D; d += L) {
    const int len = static_cast<int>(D - d < L ? D - d : L);
    Vec acc[G];
    for (int g = 0; g < G; ++g) acc[g] = Simd::zero();
    for (int64_t s = 0; s < S; ++s) {
      const float* v = a.values + s * D + d;
      const Vec vv = len == L ? Simd::load(v) : Simd::load_partial(v, len);
      for (int g = 0; g < G; ++g) acc[g] = Simd::fmadd(Simd::set1(a.scores[(h0 + g) * S + s]), vv, acc[g]);
    }
    for (int g = 0; g < G; ++g) {
      float* out = a.out + (h0 + g) * D + d;
      if (len == L)
        Simd::store(out, acc[g]);
      else
        Simd::store_partial(out, acc[g], len);
    }
  }
}

template <typename Simd, int G>
void attend_group(const DecodeAttentionArgs& a, int64_t h0) {
  group_logits<Simd, G>(a, h0);
  for (int g = 0; g < G; ++g) softmax_row(a.scores + (h0 + g) * a.keys_count, a.keys_count);
  group_values<Simd, G>(a, h0);
}

template <typename Simd>
void decode_attention_simd(const DecodeAttentionArgs& a) {
  int64_t h = 0;
  for (; h + kHeadGroup <= a.heads; h += kHeadGroup) attend_group<Simd, kHeadGroup>(a, h);
  switch (a.heads - h) {
    case 3: attend_group<Simd, 3>(a, h); break;
    case 2: attend_group<Simd, 2>(a, h); break;
    case 1: attend_group<Simd, 1>(a, h); break;
    default: break;
  }
}

}  // namespace
}  // namespace fsq::cpu
