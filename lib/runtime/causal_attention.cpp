#include "runtime/causal_attention.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "runtime/cpu/f32_gemm.h"
#include "runtime/packed_forward.h"  // check_kernel_status

namespace fsq {

int64_t attention_block_rows(int64_t batch, int64_t heads, int64_t keys) {
  const int64_t row_bytes = std::max<int64_t>(1, batch * heads * keys * int64_t{sizeof(float)});
  return std::max<int64_t>(1, kAttentionScoresBlockBytes / row_bytes);
}

namespace {

// [B, kv_heads, rows, D] x [B, kv_heads, keys, D]^T -> [B, kv_heads, rows, keys], f32 on the CPU
// through oneDNN's sgemm (cpu/f32_gemm.h), one call per (batch, KV head).
at::Tensor scores_f32(const at::Tensor& qb, const at::Tensor& k, int64_t keys, const std::string& where) {
  const int64_t B = qb.size(0), kv = qb.size(1), rows = qb.size(2), D = qb.size(3);
  at::Tensor out = at::empty({B, kv, rows, keys}, qb.options());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t g = 0; g < kv; ++g)
      check_kernel_status(cpu::f32_gemm_xwt(qb[b][g].data_ptr<float>(), rows, D, D,
                                            k.data_ptr<float>() + b * k.stride(0) + g * k.stride(1), keys, k.stride(2),
                                            out[b][g].data_ptr<float>(), keys),
                          where);
  return out;
}

// [B, kv_heads, rows, keys] x [B, kv_heads, keys, D] -> [B, kv_heads, rows, D], as above.
at::Tensor values_f32(const at::Tensor& probs, const at::Tensor& v, const std::string& where) {
  const int64_t B = probs.size(0), kv = probs.size(1), rows = probs.size(2), keys = probs.size(3), D = v.size(3);
  at::Tensor out = at::empty({B, kv, rows, D}, probs.options());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t g = 0; g < kv; ++g)
      check_kernel_status(cpu::f32_gemm_ab(probs[b][g].data_ptr<float>(), rows, keys, keys,
                                           v.data_ptr<float>() + b * v.stride(0) + g * v.stride(1), D, v.stride(2),
                                           out[b][g].data_ptr<float>(), D),
                          where);
  return out;
}

}  // namespace

at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k_in, const at::Tensor& v_in, int64_t block_rows) {
  const int64_t B = q.size(0), heads = q.size(1), T = q.size(2), D = q.size(3);
  const int64_t kv_heads = k_in.size(1), S = k_in.size(2), rep = heads / kv_heads;
  if (block_rows <= 0) block_rows = attention_block_rows(B, heads, S);
  // f32 on the CPU without autograd (the Fisher pass differentiates through attention): the
  // products run on oneDNN's sgemm, which needs unit column strides.
  const bool grad = at::GradMode::is_enabled() && (q.requires_grad() || k_in.requires_grad() || v_in.requires_grad());
  const bool raw = !grad && q.device().is_cpu() && q.scalar_type() == at::kFloat &&
                   k_in.scalar_type() == at::kFloat && v_in.scalar_type() == at::kFloat && B > 0 && T > 0 && S > 0 &&
                   D > 0;
  const at::Tensor k = raw && k_in.stride(3) != 1 ? k_in.contiguous() : k_in;
  const at::Tensor v = raw && v_in.stride(3) != 1 ? v_in.contiguous() : v_in;
  // Grouped-query attention without copying K/V: the rep query heads of one KV head are
  // stacked as rows of one matrix, so each product is a plain batched GEMM over
  // [B, kv_heads] (a broadcast over rep would expand K and V into copies per query head).
  const at::Tensor q5 = q.reshape({B, kv_heads, rep, T, D});
  const at::Tensor kt = k.transpose(-1, -2);  // [B, kv_heads, D, S]
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  const int64_t offset = S - T;  // query t sits at absolute position offset + t
  const std::string where = "causal attention";
  std::vector<at::Tensor> blocks;
  for (int64_t t0 = 0; t0 < T; t0 += block_rows) {
    const int64_t n = std::min(block_rows, T - t0);
    // Keys after the block's last query are masked for every row of it: skip them (a
    // 2048-token window then does about half the score and value products).
    const int64_t keys = std::min(S, offset + t0 + n);
    const at::Tensor qb = q5.narrow(3, t0, n).reshape({B, kv_heads, rep * n, D});
    at::Tensor scores = raw ? scores_f32(qb.contiguous(), k, keys, where)
                            : at::matmul(qb, kt.narrow(3, 0, keys)).to(at::kFloat);  // [B, kv, rep*n, keys]
    scores.mul_(scale);
    if (offset + t0 + 1 < keys) {  // the block's first row has keys in its future
      at::Tensor future =
          at::ones({n, keys}, at::TensorOptions().dtype(at::kBool).device(q.device())).triu(offset + t0 + 1);
      scores.view({B, kv_heads, rep, n, keys}).masked_fill_(future, -std::numeric_limits<float>::infinity());
    }
    at::Tensor probs = at::softmax(scores, -1).to(q.scalar_type());
    at::Tensor out = raw ? values_f32(probs.contiguous(), v, where)
                         : at::matmul(probs, v.narrow(2, 0, keys));  // [B, kv_heads, rep*n, D]
    blocks.push_back(out.view({B, kv_heads, rep, n, D}));
  }
  at::Tensor out = blocks.size() == 1 ? blocks.front() : at::cat(blocks, 3);
  return out.reshape({B, heads, T, D}).transpose(1, 2).reshape({B, T, heads * D});
}

}  // namespace fsq
