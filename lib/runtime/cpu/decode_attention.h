// Attention of one decode step for the query heads that share one KV head (GQA), on the
// KV cache's rows: the fast decode path's per-head loop (runtime/fast_decode.cpp). For each
// query head h: out[h] = softmax(scale * q[h] . K^T) V over the cache's keys and values.
// A SIMD version loads each key and value row once for all the group's heads. Raw pointers
// only; no LibTorch.
#pragma once

#include <cstdint>

#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/kernel_status.h"

namespace fsq::cpu {

struct DecodeAttentionArgs {
  const float* q = nullptr;       // [heads, head_dim], contiguous
  int64_t heads = 0;              // query heads reading this KV head
  const float* keys = nullptr;    // [keys_count, head_dim], contiguous (one KV head's cache rows)
  const float* values = nullptr;  // [keys_count, head_dim], contiguous
  int64_t keys_count = 0, head_dim = 0;
  float scale = 0.0f;             // multiplies q . k, as 1 / sqrt(head_dim)
  float* scores = nullptr;        // scratch, [heads, keys_count]
  float* out = nullptr;           // [heads, head_dim]
};

// The spec, in double: logits, max-subtracted exponentials, normalized weights and the
// weighted sum of values. Writes out only.
KernelStatus decode_attention_reference(const DecodeAttentionArgs& args);

// The same in float: logits summed in float, expf, weights exp / total, the weighted sum
// accumulated in key order. Scalar or SIMD per isa.
KernelStatus decode_attention(const DecodeAttentionArgs& args, CpuIsa isa);

}  // namespace fsq::cpu
