// Causal scaled-dot-product attention over grouped-query heads, computed in blocks of query
// rows. A whole 2048-token window's scores are heads x 2048 x 2048 floats (151 MB for
// SmolLM2), and each of the four ops on them (scores, scale, mask, softmax) allocated a fresh
// block that large: glibc maps blocks over its 32 MiB mmap threshold anew every time, so the
// kernel zeroed and page-faulted ~600 MB per layer (about a fifth of prefill time in perf).
// Blocks of scores under that threshold are reused from the heap, and scale and mask run in
// place. A block multiplies only the keys its last query sees, so the products shrink with
// causality; the value product's length, and so its rounding, depends on the block size.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace fsq {

// Bytes one block's float32 scores may take (under glibc's largest mmap threshold).
inline constexpr int64_t kAttentionScoresBlockBytes = int64_t{16} << 20;

// Query rows per block so that batch x heads x rows x keys floats fit the block budget (>= 1).
int64_t attention_block_rows(int64_t batch, int64_t heads, int64_t keys);

// q [B, heads, T, D]; k, v [B, kv_heads, S, D] (heads a multiple of kv_heads; query head h
// reads kv head h / (heads / kv_heads)); query t sits at absolute position S - T + t and sees
// keys 0 .. S - T + t. Scores and softmax in float32; returns [B, T, heads * D] in q's dtype.
// block_rows: query rows per block (0: attention_block_rows).
at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t block_rows = 0);

}  // namespace fsq
