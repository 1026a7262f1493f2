#include "runtime/decoder_layer.h"

#include <ATen/ATen.h>

#include "common/error.h"
#include "runtime/causal_attention.h"

namespace fsq {
namespace {

at::Tensor rotate_half(const at::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

// x: [B, heads, T, D]; cos/sin: [T, D].
at::Tensor apply_rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  return x * cos + rotate_half(x) * sin;
}

}  // namespace

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  auto xf = x.to(at::kFloat);
  auto normed = xf * at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return weight.to(at::kFloat).mul(normed).to(x.scalar_type());
}

std::unique_ptr<Linear>& DecoderLayer::linear(const std::string& role) {
  if (role == "q_proj") return q;
  if (role == "k_proj") return k;
  if (role == "v_proj") return v;
  if (role == "o_proj") return o;
  if (role == "gate_proj") return gate;
  if (role == "up_proj") return up;
  if (role == "down_proj") return down;
  throw Error("decoder layer", "no linear with role " + quote_name(role));
}

const std::unique_ptr<Linear>& DecoderLayer::linear(const std::string& role) const {
  return const_cast<DecoderLayer*>(this)->linear(role);
}

at::Tensor DecoderLayer::forward(const at::Tensor& h, const RopeTables& rope, const ModelConfig& cfg,
                                 int64_t start, KVCache* cache, int64_t index, LayerTap* tap) const {
  if (tap) tap->range_point(kRangeResidualIn, h);
  at::Tensor x = rms_norm(h, input_norm, cfg.rms_norm_eps);
  if (tap) tap->group_input("attn_in", x);
  at::Tensor h2 = h + attention(x, rope, cfg, start, cache, index, tap);
  if (tap) tap->range_point(kRangeResidualMid, h2);
  at::Tensor y = rms_norm(h2, post_attn_norm, cfg.rms_norm_eps);
  if (tap) tap->group_input("mlp_in", y);
  at::Tensor out = h2 + mlp(y, tap);
  if (tap) tap->range_point(kRangeResidualOut, out);
  return out;
}

at::Tensor DecoderLayer::attention(const at::Tensor& x, const RopeTables& rope, const ModelConfig& cfg, int64_t start,
                                   KVCache* cache, int64_t index, LayerTap* tap) const {
  const int64_t B = x.size(0), T = x.size(1), D = cfg.head_dim;
  const int64_t heads = cfg.num_heads, kv_heads = cfg.num_kv_heads;
  if (start + T > rope.cos.size(0))
    throw Error("forward", "positions up to " + std::to_string(start + T) + " exceed the model's maximum " +
                               std::to_string(rope.cos.size(0)));
  at::Tensor qh = q->forward(x).view({B, T, heads, D}).transpose(1, 2);
  at::Tensor kh = k->forward(x).view({B, T, kv_heads, D}).transpose(1, 2);
  at::Tensor vh = v->forward(x).view({B, T, kv_heads, D}).transpose(1, 2);
  const at::Tensor cos = rope.cos.narrow(0, start, T), sin = rope.sin.narrow(0, start, T);
  qh = apply_rope(qh, cos, sin);
  kh = apply_rope(kh, cos, sin);
  if (tap) {
    tap->range_point(kRangeQ, qh);
    tap->range_point(kRangeK, kh);
    tap->range_point(kRangeV, vh);
  }
  int64_t S = T;  // key length
  if (cache != nullptr) {
    if (start + T > cache->capacity)
      throw Error("KV cache", "needs " + std::to_string(start + T) + " positions, capacity " +
                                  std::to_string(cache->capacity));
    cache->k[index].narrow(2, start, T).copy_(kh);
    cache->v[index].narrow(2, start, T).copy_(vh);
    S = start + T;
    kh = cache->k[index].narrow(2, 0, S);
    vh = cache->v[index].narrow(2, 0, S);
  }
  at::Tensor attn = causal_attention(qh, kh, vh);
  if (tap) tap->group_input("attn_out", attn);
  return o->forward(attn);
}

at::Tensor DecoderLayer::mlp(const at::Tensor& y, LayerTap* tap) const {
  at::Tensor act;
  {  // gate and up outputs die here, before down_proj runs (peak memory)
    const at::Tensor g = gate->forward(y), u = up->forward(y);
    if (tap) {
      tap->range_point(kRangeGate, g);
      tap->range_point(kRangeUp, u);
    }
    act = at::silu(g) * u;
  }
  if (tap) tap->group_input("mlp_out", act);
  return down->forward(act);
}

void check_token_id(int64_t id, int64_t vocab) {
  if (id < 0 || id >= vocab)
    throw Error("embedding", "token id " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(vocab));
}

}  // namespace fsq
