// The SIMD decode attention shared by decode_attention_avx2.cpp and _avx512.cpp, over a
// Simd struct (VecOps plus the attention's own operations, defined in those files). Query
// heads go in groups of up to kHeadGroup: each key row's vectors are loaded once and
// multiplied with every head of the group, and each value row's once and added into every
// head's output accumulators.
//
// Three things keep the short per-key work off the critical path (SmolLM2: 3 query heads per
// KV head, head_dim 64; attention was 12 % of a 300-token generation at 1 thread):
// - logits for Simd::kKeyBlock keys at a time, their lane sums in one transposing reduction
//   instead of one horizontal sum per key and head;
// - the softmax's exponentials in vectors (Simd::exp_nonpositive, a polynomial within 2 ulp
//   like libm's expf) instead of a libm call per key;
// - values kValueVectors vectors wide, so one broadcast weight feeds several FMAs.
#pragma once

#include <math.h>

#include <cstdint>

#include "runtime/cpu/decode_attention_isa.h"
#include "runtime/cpu/exp_poly.h"

namespace fsq::cpu {
namespace {

constexpr int kHeadGroup = 4;
constexpr int kValueVectors = 4;  // value lanes per pass: 4 vectors (64 floats with AVX-512)

// scores[h, s] = scale * q[h] . k[s] for the G heads from h0.
template <typename Simd, int G>
void group_logits(const DecodeAttentionArgs& a, int64_t h0) {
  using Vec = typename Simd::Vec;
  constexpr int64_t L = Simd::kLanes;
  constexpr int B = Simd::kKeyBlock;
  const int64_t D = a.head_dim, S = a.keys_count;
  int64_t s = 0;
  for (; s + B <= S; s += B) {
    Vec acc[G][B];
    for (int g = 0; g < G; ++g)
      for (int j = 0; j < B; ++j) acc[g][j] = Simd::zero();
    for (int64_t d = 0; d < D; d += L) {
      const int len = static_cast<int>(D - d < L ? D - d : L);
      Vec kv[B];
      for (int j = 0; j < B; ++j) {
        const float* k = a.keys + (s + j) * D + d;
        kv[j] = len == L ? Simd::load(k) : Simd::load_partial(k, len);
      }
      for (int g = 0; g < G; ++g) {
        const float* q = a.q + (h0 + g) * D + d;
        const Vec qv = len == L ? Simd::load(q) : Simd::load_partial(q, len);
        for (int j = 0; j < B; ++j) acc[g][j] = Simd::fmadd(qv, kv[j], acc[g][j]);
      }
    }
    for (int g = 0; g < G; ++g) {
      float sums[B];
      Simd::reduce_add_block(acc[g], sums);
      for (int j = 0; j < B; ++j) a.scores[(h0 + g) * S + s + j] = sums[j] * a.scale;
    }
  }
  for (; s < S; ++s) {
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

// A row of scores becomes its softmax weights: exp(l - top) / total, the total summed per
// lane and then across lanes. Keys past the last full vector go through libm's expf.
template <typename Simd>
void softmax_row(float* p, int64_t S) {
  using Vec = typename Simd::Vec;
  constexpr int64_t L = Simd::kLanes;
  const int64_t full = S / L * L;
  float top = p[0];
  if (full > 0) {
    Vec top_v = Simd::load(p);
    for (int64_t s = L; s < full; s += L) top_v = Simd::max(top_v, Simd::load(p + s));
    top = Simd::reduce_max(top_v);
  }
  for (int64_t s = full; s < S; ++s) top = p[s] > top ? p[s] : top;
  const Vec top_v = Simd::set1(top);
  Vec total_v = Simd::zero();
  for (int64_t s = 0; s < full; s += L) {
    const Vec e = Simd::exp_nonpositive(Simd::sub(Simd::load(p + s), top_v));
    Simd::store(p + s, e);
    total_v = Simd::add(total_v, e);
  }
  float total = Simd::reduce_add(total_v);
  for (int64_t s = full; s < S; ++s) total += (p[s] = expf(p[s] - top));
  const Vec total_b = Simd::set1(total);
  for (int64_t s = 0; s < full; s += L) Simd::store(p + s, Simd::div(Simd::load(p + s), total_b));
  for (int64_t s = full; s < S; ++s) p[s] /= total;
}

// out[h] = sum_s p[h, s] v[s] for the G heads from h0, kValueVectors vectors of lanes per pass.
template <typename Simd, int G>
void group_values(const DecodeAttentionArgs& a, int64_t h0) {
  using Vec = typename Simd::Vec;
  constexpr int64_t L = Simd::kLanes, kPass = kValueVectors * L;
  const int64_t D = a.head_dim, S = a.keys_count;
  for (int64_t d0 = 0; d0 < D; d0 += kPass) {
    int len[kValueVectors];  // lanes of each vector of this pass (0: past head_dim)
    for (int v = 0; v < kValueVectors; ++v) {
      const int64_t left = D - d0 - v * L;
      len[v] = static_cast<int>(left <= 0 ? 0 : left < L ? left : L);
    }
    Vec acc[G][kValueVectors];
    for (int g = 0; g < G; ++g)
      for (int v = 0; v < kValueVectors; ++v) acc[g][v] = Simd::zero();
    for (int64_t s = 0; s < S; ++s) {
      const float* row = a.values + s * D + d0;
      Vec vv[kValueVectors];
      for (int v = 0; v < kValueVectors; ++v)
        vv[v] = len[v] == L ? Simd::load(row + v * L) : len[v] > 0 ? Simd::load_partial(row + v * L, len[v]) : Simd::zero();
      for (int g = 0; g < G; ++g) {
        const Vec weight = Simd::set1(a.scores[(h0 + g) * S + s]);
        for (int v = 0; v < kValueVectors; ++v) acc[g][v] = Simd::fmadd(weight, vv[v], acc[g][v]);
      }
    }
    for (int g = 0; g < G; ++g) {
      float* out = a.out + (h0 + g) * D + d0;
      for (int v = 0; v < kValueVectors; ++v) {
        if (len[v] == L)
          Simd::store(out + v * L, acc[g][v]);
        else if (len[v] > 0)
          Simd::store_partial(out + v * L, acc[g][v], len[v]);
      }
    }
  }
}

template <typename Simd, int G>
void attend_group(const DecodeAttentionArgs& a, int64_t h0) {
  group_logits<Simd, G>(a, h0);
  for (int g = 0; g < G; ++g) softmax_row<Simd>(a.scores + (h0 + g) * a.keys_count, a.keys_count);
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
