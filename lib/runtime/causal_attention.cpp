#include "runtime/causal_attention.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace fsq {

int64_t attention_block_rows(int64_t batch, int64_t heads, int64_t keys) {
  const int64_t row_bytes = std::max<int64_t>(1, batch * heads * keys * int64_t{sizeof(float)});
  return std::max<int64_t>(1, kAttentionScoresBlockBytes / row_bytes);
}

at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t block_rows) {
  const int64_t B = q.size(0), heads = q.size(1), T = q.size(2), D = q.size(3);
  const int64_t kv_heads = k.size(1), S = k.size(2), rep = heads / kv_heads;
  if (block_rows <= 0) block_rows = attention_block_rows(B, heads, S);
  // Grouped-query attention without copying K/V: the rep query heads of one KV head are
  // stacked as rows of one matrix, so each product is a plain batched GEMM over
  // [B, kv_heads] (a broadcast over rep would expand K and V into copies per query head).
  const at::Tensor q5 = q.reshape({B, kv_heads, rep, T, D});
  const at::Tensor kt = k.transpose(-1, -2);  // [B, kv_heads, D, S]
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  const int64_t offset = S - T;  // query t sits at absolute position offset + t
  std::vector<at::Tensor> blocks;
  for (int64_t t0 = 0; t0 < T; t0 += block_rows) {
    const int64_t n = std::min(block_rows, T - t0);
    // Keys after the block's last query are masked for every row of it: skip them (a
    // 2048-token window then does about half the score and value products).
    const int64_t keys = std::min(S, offset + t0 + n);
    const at::Tensor qb = q5.narrow(3, t0, n).reshape({B, kv_heads, rep * n, D});
    at::Tensor scores = at::matmul(qb, kt.narrow(3, 0, keys)).to(at::kFloat);  // [B, kv, rep*n, keys]
    scores.mul_(scale);
    if (offset + t0 + 1 < keys) {  // the block's first row has keys in its future
      at::Tensor future =
          at::ones({n, keys}, at::TensorOptions().dtype(at::kBool).device(q.device())).triu(offset + t0 + 1);
      scores.view({B, kv_heads, rep, n, keys}).masked_fill_(future, -std::numeric_limits<float>::infinity());
    }
    at::Tensor probs = at::softmax(scores, -1).to(q.scalar_type());
    at::Tensor out = at::matmul(probs, v.narrow(2, 0, keys));  // [B, kv_heads, rep*n, D]
    blocks.push_back(out.view({B, kv_heads, rep, n, D}));
  }
  at::Tensor out = blocks.size() == 1 ? blocks.front() : at::cat(blocks, 3);
  return out.reshape({B, heads, T, D}).transpose(1, 2).reshape({B, T, heads * D});
}

}  // namespace fsq
