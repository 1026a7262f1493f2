// The decode step's spec on the host (decode_model.h): the shape checks both decoders share,
// and ReferenceDecoder, the step of decode_step.h on the ops' host references. Built with or
// without CUDA.
#include <cassert>
#include <vector>

#include "runtime/cuda/decode_step.h"

namespace fsq::cuda {
namespace {

std::string view_problem(const char* name, const DecodeLinear& w, int64_t rows, int64_t cols) {
  const std::string who = std::string(name) + ": ";
  using Kind = DecodeLinear::Kind;
  if (w.kind == Kind::Half) {
    if (w.half.data == nullptr) return who + "no fp16 values";
    if (std::string why = dense_gemv_problem(w.half, 1); !why.empty()) return who + why;
  }
  const bool consistent = w.kind == Kind::Lut       ? cpu::check_lut_view(w.lut) == cpu::KernelStatus::Ok
                          : w.kind == Kind::Uniform ? cpu::check_uniform_view(w.uniform) == cpu::KernelStatus::Ok
                                                    : true;
  if (!consistent) return who + "inconsistent packed weight view";
  if (w.rows() != rows || w.cols() != cols)
    return who + "shape [" + std::to_string(w.rows()) + " x " + std::to_string(w.cols()) + "], expected [" +
           std::to_string(rows) + " x " + std::to_string(cols) + "]";
  // The CUDA GEMVs' unit of work along a row is 32 codes.
  if (w.kind != Kind::Half && (w.cols() % 32 != 0 || (w.kind == Kind::Uniform && w.uniform.group_cols % 32 != 0)))
    return who + "columns and group size must be multiples of 32";
  return "";
}

// The host references of the ops, with the launchers' signatures (decode_step.h).
struct ReferenceOps {
  std::vector<float> x_rows, y_rows;  // a GEMV's rows of x and y as floats

  std::string embed(const DecodeLinear& w, const int32_t* ids, int64_t batch, float* h) {
    if (w.kind == DecodeLinear::Kind::Half)
      embed_half_rows_reference(w.half.data, w.half.rows, w.half.cols, ids, batch, h);
    else
      embed_uniform_rows_reference(w.uniform, ids, batch, h);
    return "";
  }
  std::string rms_norm(const float* x, const float* w, int64_t rows, int64_t cols, float eps, uint16_t* y,
                       ActType act) {
    rms_norm_to_act_reference(x, w, rows, cols, eps, y, act);
    return "";
  }
  // The spec's matmul (double sums) on the act values as floats, rounded to act once.
  std::string gemv(const DecodeLinear& w, const uint16_t* x, int64_t m, int64_t x_stride, uint16_t* y,
                   int64_t y_stride, ActType act) {
    const int64_t rows = w.rows(), cols = w.cols();
    x_rows.resize(static_cast<size_t>(m * cols));
    y_rows.resize(static_cast<size_t>(m * rows));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t k = 0; k < cols; ++k) x_rows[i * cols + k] = from_act_bits(x[i * x_stride + k], act);
    cpu::KernelStatus status = cpu::KernelStatus::Ok;
    if (w.kind == DecodeLinear::Kind::Half)
      dense_matmul_f16_reference(w.half, x_rows.data(), m, cols, y_rows.data(), rows);
    else if (w.kind == DecodeLinear::Kind::Lut)
      status = cpu::lut_matmul_reference(w.lut, x_rows.data(), m, cols, y_rows.data(), rows);
    else
      status = cpu::uniform_matmul_reference(w.uniform, x_rows.data(), m, cols, y_rows.data(), rows);
    if (status != cpu::KernelStatus::Ok) return "reference GEMV: bad arguments";
    for (int64_t i = 0; i < m; ++i)
      for (int64_t n = 0; n < rows; ++n) y[i * y_stride + n] = to_act_bits(y_rows[i * rows + n], act);
    return "";
  }
  std::string rope_append(const AttentionShape& s, const uint16_t* q, const uint16_t* k, const uint16_t* v,
                          int64_t stride, ActType act, const float* cos, const float* sin, const int32_t* pos,
                          float* q_out, float* k_cache, float* v_cache) {
    rope_append_reference(s, q, k, v, stride, act, cos, sin, *pos, q_out, k_cache, v_cache);
    return "";
  }
  std::string attention(const AttentionShape& s, const float* q, const float* k_cache, const float* v_cache,
                        const int32_t* pos, float scale, uint16_t* out, ActType act) {
    decode_attention_reference(s, q, k_cache, v_cache, *pos, scale, out, act);
    return "";
  }
  std::string silu_mul(const uint16_t* gate, const uint16_t* up, int64_t rows, int64_t cols, int64_t stride,
                       uint16_t* out, ActType act) {
    silu_mul_act_reference(gate, up, rows, cols, stride, out, act);
    return "";
  }
  std::string add(float* h, const uint16_t* y, int64_t count, ActType act) {
    add_act_reference(h, y, count, act);
    return "";
  }
};

}  // namespace

std::string decode_spec_problem(const DecodeModelSpec& s, int64_t batch, int64_t capacity) {
  if (batch < 1 || batch > kMaxGemvBatch) return "batch must be 1.." + std::to_string(kMaxGemvBatch);
  if (s.hidden < 1 || s.intermediate < 1 || s.vocab < 1 || s.layers.empty()) return "empty model";
  AttentionShape as;
  as.batch = batch, as.heads = s.heads, as.kv_heads = s.kv_heads, as.head_dim = s.head_dim, as.capacity = capacity;
  if (std::string why = attention_shape_problem(as); !why.empty()) return why;
  // Rows of x the GEMVs read must start 16-byte aligned: multiples of 8 act values.
  if (s.hidden % 8 != 0 || s.intermediate % 8 != 0 || (s.heads * s.head_dim) % 8 != 0)
    return "hidden, intermediate and heads x head_dim must be multiples of 8";
  if (!s.final_norm || !s.rope_cos || !s.rope_sin) return "missing final norm or rotary tables";
  if (s.rope_positions < capacity) return "rotary tables shorter than the capacity";
  const int64_t q_width = s.heads * s.head_dim, kv_width = s.kv_heads * s.head_dim;
  if (s.embedding.kind == DecodeLinear::Kind::Lut || s.head.kind == DecodeLinear::Kind::Lut)
    return "the embedding and head must be uniform or fp16 matrices";
  if (std::string why = view_problem("embedding", s.embedding, s.vocab, s.hidden); !why.empty()) return why;
  if (std::string why = view_problem("lm_head", s.head, s.vocab, s.hidden); !why.empty()) return why;
  for (size_t i = 0; i < s.layers.size(); ++i) {
    const DecodeLayerSpec& L = s.layers[i];
    const std::string layer = "layer " + std::to_string(i) + " ";
    if (!L.input_norm || !L.post_attn_norm) return layer + "norm missing";
    const struct {
      const char* name;
      const DecodeLinear& w;
      int64_t rows, cols;
    } linears[] = {{"q_proj", L.q, q_width, s.hidden},         {"k_proj", L.k, kv_width, s.hidden},
                   {"v_proj", L.v, kv_width, s.hidden},        {"o_proj", L.o, s.hidden, q_width},
                   {"gate_proj", L.gate, s.intermediate, s.hidden}, {"up_proj", L.up, s.intermediate, s.hidden},
                   {"down_proj", L.down, s.hidden, s.intermediate}};
    for (const auto& lin : linears)
      if (std::string why = view_problem(lin.name, lin.w, lin.rows, lin.cols); !why.empty()) return layer + why;
  }
  return "";
}

struct ReferenceDecoder::State {
  DecodeModelSpec spec;
  detail::StepShape shape;
  detail::BufferSizes sizes{};
  std::vector<float> h, q;
  std::vector<uint16_t> x, qkv, attn, proj, gate_up, mlp, logits;
  std::vector<std::vector<float>> k_cache, v_cache;
  std::vector<int32_t> ids;
  int32_t pos = 0;
  ReferenceOps ops;
};

ReferenceDecoder::ReferenceDecoder(const DecodeModelSpec& spec, int64_t batch, int64_t capacity, ActType act)
    : state_(std::make_unique<State>()) {
  assert(decode_spec_problem(spec, batch, capacity).empty());
  State& s = *state_;
  s.spec = spec;
  s.shape.batch = batch, s.shape.capacity = capacity, s.shape.act = act;
  s.sizes = detail::buffer_sizes(spec, batch, capacity);
  const auto sized = [](auto& v, int64_t n) { v.assign(static_cast<size_t>(n), {}); };
  sized(s.h, s.sizes.h), sized(s.q, s.sizes.q), sized(s.x, s.sizes.x), sized(s.qkv, s.sizes.qkv);
  sized(s.attn, s.sizes.attn), sized(s.proj, s.sizes.proj), sized(s.gate_up, s.sizes.gate_up);
  sized(s.mlp, s.sizes.mlp), sized(s.logits, s.sizes.logits);
  s.k_cache.assign(spec.layers.size(), std::vector<float>(static_cast<size_t>(s.sizes.cache)));
  s.v_cache = s.k_cache;
  s.ids.assign(static_cast<size_t>(batch), 0);
}

ReferenceDecoder::~ReferenceDecoder() = default;

std::string ReferenceDecoder::step(const int32_t* ids, int64_t pos, float* logits) {
  State& s = *state_;
  if (pos < 0 || pos >= s.shape.capacity) return "position " + std::to_string(pos) + " outside the cache";
  for (int64_t b = 0; b < s.shape.batch; ++b) {
    if (ids[b] < 0 || ids[b] >= s.spec.vocab) return "token id " + std::to_string(ids[b]) + " outside the vocabulary";
    s.ids[b] = ids[b];
  }
  s.pos = static_cast<int32_t>(pos);
  detail::StepBuffers b;
  b.h = s.h.data(), b.x = s.x.data(), b.qkv = s.qkv.data(), b.q = s.q.data(), b.attn = s.attn.data();
  b.proj = s.proj.data(), b.gate_up = s.gate_up.data(), b.mlp = s.mlp.data(), b.logits = s.logits.data();
  for (size_t i = 0; i < s.k_cache.size(); ++i) {
    b.k_cache.push_back(s.k_cache[i].data());
    b.v_cache.push_back(s.v_cache[i].data());
  }
  b.ids = s.ids.data(), b.pos = &s.pos, b.cos = s.spec.rope_cos, b.sin = s.spec.rope_sin;
  if (std::string e = detail::run_decode_step(s.spec, b, s.shape, s.ops); !e.empty()) return e;
  for (size_t i = 0; i < s.logits.size(); ++i) logits[i] = from_act_bits(s.logits[i], s.shape.act);
  return "";
}

}  // namespace fsq::cuda
