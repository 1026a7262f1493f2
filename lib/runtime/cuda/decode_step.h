// The decode step of decode_model.h, written once over an `Ops` policy: ReferenceOps (host
// references, decode_model_reference.cpp) or DeviceOps (launchers on a stream,
// device_decoder.cu). The device decoder therefore runs exactly the sequence of ops the
// reference decoder specifies; only the ops differ, and each is tested against its reference
// on its own. Internal to the decoders.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/cuda/decode_model.h"

namespace fsq::cuda::detail {

// One step's buffers, in the Ops' memory; act values as uint16_t.
struct StepBuffers {
  float* h = nullptr;           // [batch, hidden] residual stream
  uint16_t* x = nullptr;        // [batch, hidden] normalized input of a linear group
  uint16_t* qkv = nullptr;      // [batch, qkv_stride]: q | k | v
  float* q = nullptr;           // [batch, heads, head_dim] rotated queries
  uint16_t* attn = nullptr;     // [batch, heads * head_dim]
  uint16_t* proj = nullptr;     // [batch, hidden] o_proj or down_proj output
  uint16_t* gate_up = nullptr;  // [batch, 2 * intermediate]: gate | up
  uint16_t* mlp = nullptr;      // [batch, intermediate]
  uint16_t* logits = nullptr;   // [batch, vocab]
  std::vector<float*> k_cache, v_cache;  // per layer [batch, kv_heads, capacity, head_dim]
  const int32_t* ids = nullptr;  // [batch]
  const int32_t* pos = nullptr;  // the step's position
  const float* cos = nullptr;    // [capacity, head_dim]
  const float* sin = nullptr;
};

struct StepShape {
  int64_t batch = 0, capacity = 0;
  ActType act = ActType::F16;
};

// q | k | v of one sequence, rounded up to 8 values so every row stays 16-byte aligned.
inline int64_t qkv_stride(const DecodeModelSpec& s) { return ((s.heads + 2 * s.kv_heads) * s.head_dim + 7) / 8 * 8; }

// Sizes of the step's buffers, in elements.
struct BufferSizes {
  int64_t h, x, qkv, q, attn, proj, gate_up, mlp, logits, cache;
};
inline BufferSizes buffer_sizes(const DecodeModelSpec& s, int64_t batch, int64_t capacity) {
  const int64_t b = batch;
  return {b * s.hidden,       b * s.hidden, b * qkv_stride(s),       b * s.heads * s.head_dim,
          b * s.heads * s.head_dim, b * s.hidden, b * 2 * s.intermediate, b * s.intermediate,
          b * s.vocab,        b * s.kv_heads * capacity * s.head_dim};
}

// The step: `spec`'s pointers and `b` live in the Ops' memory.
template <class Ops>
std::string run_decode_step(const DecodeModelSpec& spec, const StepBuffers& b, const StepShape& shape, Ops& ops) {
#define FSQ_DECODE_OP(call)                 \
  do {                                      \
    std::string problem = (call);           \
    if (!problem.empty()) return problem;   \
  } while (false)
  const int64_t batch = shape.batch, hidden = spec.hidden, dim = spec.head_dim, inter = spec.intermediate;
  const int64_t q_width = spec.heads * dim, kv_width = spec.kv_heads * dim, stride = qkv_stride(spec);
  const ActType act = shape.act;
  AttentionShape as;
  as.batch = batch, as.heads = spec.heads, as.kv_heads = spec.kv_heads, as.head_dim = dim, as.capacity = shape.capacity;
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(dim)));
  uint16_t* q = b.qkv;
  uint16_t* k = q + q_width;
  uint16_t* v = k + kv_width;
  FSQ_DECODE_OP(ops.embed(spec.embedding, b.ids, batch, b.h));
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const DecodeLayerSpec& L = spec.layers[i];
    FSQ_DECODE_OP(ops.rms_norm(b.h, L.input_norm, batch, hidden, spec.rms_norm_eps, b.x, act));
    FSQ_DECODE_OP(ops.gemv(L.q, b.x, batch, hidden, q, stride, act));
    FSQ_DECODE_OP(ops.gemv(L.k, b.x, batch, hidden, k, stride, act));
    FSQ_DECODE_OP(ops.gemv(L.v, b.x, batch, hidden, v, stride, act));
    FSQ_DECODE_OP(ops.rope_append(as, q, k, v, stride, act, b.cos, b.sin, b.pos, b.q, b.k_cache[i], b.v_cache[i]));
    FSQ_DECODE_OP(ops.attention(as, b.q, b.k_cache[i], b.v_cache[i], b.pos, scale, b.attn, act));
    FSQ_DECODE_OP(ops.gemv(L.o, b.attn, batch, q_width, b.proj, hidden, act));
    FSQ_DECODE_OP(ops.add(b.h, b.proj, batch * hidden, act));
    FSQ_DECODE_OP(ops.rms_norm(b.h, L.post_attn_norm, batch, hidden, spec.rms_norm_eps, b.x, act));
    FSQ_DECODE_OP(ops.gemv(L.gate, b.x, batch, hidden, b.gate_up, 2 * inter, act));
    FSQ_DECODE_OP(ops.gemv(L.up, b.x, batch, hidden, b.gate_up + inter, 2 * inter, act));
    FSQ_DECODE_OP(ops.silu_mul(b.gate_up, b.gate_up + inter, batch, inter, 2 * inter, b.mlp, act));
    FSQ_DECODE_OP(ops.gemv(L.down, b.mlp, batch, inter, b.proj, hidden, act));
    FSQ_DECODE_OP(ops.add(b.h, b.proj, batch * hidden, act));
  }
  FSQ_DECODE_OP(ops.rms_norm(b.h, spec.final_norm, batch, hidden, spec.rms_norm_eps, b.x, act));
  FSQ_DECODE_OP(ops.gemv(spec.head, b.x, batch, hidden, b.logits, spec.vocab, act));
#undef FSQ_DECODE_OP
  return {};
}

}  // namespace fsq::cuda::detail
