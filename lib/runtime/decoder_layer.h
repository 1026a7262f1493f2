// One decoder layer of the LLaMA family on at::Tensor (RMSNorm, RoPE, grouped-query
// attention with its KV cache, SwiGLU MLP), the cache it writes and the tap calibration
// reads through. The pieces below the model: the fast decoder, the integer-only layers and
// calibration use them without runtime/model.h (LlamaModel, one floor up, holds the layers).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "formats/model_config.h"
#include "formats/packed_checkpoint.h"  // IntonlyRange
#include "runtime/linear.h"
#include "runtime/rope.h"

namespace fsq {

// Keys/values for incremental decoding: per layer [batch, kv_heads, max_len, head_dim].
struct KVCache {
  std::vector<at::Tensor> k;
  std::vector<at::Tensor> v;
  int64_t length = 0;   // positions filled so far
  int64_t capacity = 0;
};

// Observes what a decoder layer computes, for calibration. `group` is an ArchSpec group
// name ("attn_in", "attn_out", "mlp_in", "mlp_out"): x is the input that group's linears read.
class LayerTap {
 public:
  virtual ~LayerTap() = default;
  virtual void group_input(const std::string& group, const at::Tensor& x) = 0;
  // The activations the integer-only path requantizes to (formats/packed_checkpoint.h
  // IntonlyRange: residual stream in/mid/out, q and k after RoPE, v, gate, up).
  virtual void range_point(IntonlyRange /*which*/, const at::Tensor& /*x*/) {}
};

// Throws fsq::Error naming the id unless 0 <= id < vocab (an embedding row exists for it).
void check_token_id(int64_t id, int64_t vocab);

struct DecoderLayer {
  at::Tensor input_norm;      // [hidden]
  at::Tensor post_attn_norm;  // [hidden]
  std::unique_ptr<Linear> q, k, v, o, gate, up, down;

  // The linear of an ArchSpec role ("q_proj", ..., "down_proj"); throws on an unknown role.
  std::unique_ptr<Linear>& linear(const std::string& role);
  const std::unique_ptr<Linear>& linear(const std::string& role) const;

  // h: [B, T, hidden]; positions start at `start` (cache->length when a cache is given).
  // With a cache the new keys/values are written at [start, start+T) of layer `index`.
  // A tap, when given, sees the input of every linear group.
  at::Tensor forward(const at::Tensor& h, const RopeTables& rope, const ModelConfig& cfg,
                     int64_t start, KVCache* cache, int64_t index, LayerTap* tap = nullptr) const;
  // The two halves of forward(), for passes that measure one block: self-attention on the
  // normalized input x (ending with o_proj), and the SwiGLU MLP on the normalized input y.
  at::Tensor attention(const at::Tensor& x, const RopeTables& rope, const ModelConfig& cfg, int64_t start,
                       KVCache* cache, int64_t index, LayerTap* tap = nullptr) const;
  at::Tensor mlp(const at::Tensor& y, LayerTap* tap = nullptr) const;
};

// RMSNorm in fp32 (as HF does), result in the input's dtype: the layers' norms and the
// model's final norm.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);

}  // namespace fsq
