#include "plan/cost_model.h"

#include <algorithm>

namespace fsq::plan {

namespace {

constexpr int64_t kFp16Bytes = 2;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

double roofline(double flops, double bytes, double flops_per_s, const GpuSpec& g, const Efficiency& e) {
  return std::max(flops / (flops_per_s * e.compute), bytes / (g.bandwidth_gbs * 1e9 * e.memory));
}

// 8-bit layers take the faster of the int8 path (W8A8) and dequantizing into fp16 GEMMs
// (V100's DP4A int8 is slower than its fp16 tensor cores).
double compute_rate(const GpuSpec& g, int bits) {
  if (bits == 8) return std::max(g.int8_tops, g.fp16_tflops) * 1e12;
  return g.fp16_tflops * 1e12;
}

}  // namespace

bool is_supported_width(int bits) { return bits == 3 || bits == 4 || bits == 8 || bits == 16; }

int64_t linear_weight_bytes(const LinearShape& l, int bits) {
  switch (bits) {
    case 16:
      return l.in * l.out * kFp16Bytes;
    case 8:
      return l.in * l.out + l.out * kFp16Bytes;
    case 3:
    case 4:
      // Codes packed over the whole row; one fp16 scale and one fp16 zero per group.
      return l.out * ceil_div(l.in * bits, 8) + l.out * ceil_div(l.in, kGroupSize) * 2 * kFp16Bytes;
    default:
      return -1;
  }
}

int64_t layer_weight_bytes(const ModelSpec& m, int bits) {
  int64_t bytes = layer_fp16_params(m) * kFp16Bytes;
  for (const auto& l : layer_linears(m)) bytes += linear_weight_bytes(l, bits);
  return bytes;
}

int64_t embedding_bytes(const ModelSpec& m) {
  int64_t params = m.vocab * m.hidden;
  if (m.family == Family::kOpt) params += (m.max_positions + 2) * m.hidden;  // HF's offset of 2
  if (m.family == Family::kBloom) params += 2 * m.hidden;                    // word_embeddings_layernorm
  return params * kFp16Bytes;
}

int64_t head_bytes(const ModelSpec& m) {
  int64_t norm = m.family == Family::kLlama ? m.hidden : 2 * m.hidden;
  return (norm + m.vocab * m.hidden) * kFp16Bytes;
}

int64_t layer_kv_cache_bytes(const ModelSpec& m, const Workload& w) {
  return 2 * w.batch * w.context() * m.kv_dim() * w.kv_bits / 8;
}

int64_t prefill_temp_bytes(const ModelSpec& m, const Workload& w) {
  const int64_t tokens = w.prefill_microbatch * w.prompt_len;
  // Attention: input, q, k, v, output and the score matrix of every head.
  int64_t attention = tokens * (3 * m.hidden + 2 * m.kv_dim()) + w.prefill_microbatch * m.heads * w.prompt_len * w.prompt_len;
  // MLP: input, output, inner activations (two of them when gated).
  int64_t mlp = tokens * (2 * m.hidden + (m.family == Family::kLlama ? 2 : 1) * m.ffn);
  return std::max(attention, mlp) * kFp16Bytes;
}

int64_t decode_temp_bytes(const ModelSpec& m, const Workload& w) {
  const int64_t seqs = w.decode_microbatch;
  int64_t attention = seqs * (3 * m.hidden + 2 * m.kv_dim()) + seqs * m.heads * w.context();
  int64_t mlp = seqs * (2 * m.hidden + (m.family == Family::kLlama ? 2 : 1) * m.ffn);
  return std::max(attention, mlp) * kFp16Bytes;
}

int64_t logits_bytes(const ModelSpec& m, const Workload& w) {
  return std::max(w.prefill_microbatch, w.decode_microbatch) * m.vocab * kFp16Bytes;
}

PhaseSeconds layer_seconds(const ModelSpec& m, const Workload& w, const GpuSpec& g, int bits, const Efficiency& e) {
  const double linear = static_cast<double>(layer_linear_params(m));
  const double weights = static_cast<double>(layer_weight_bytes(m, bits));
  const double rate = compute_rate(g, bits);
  const double kv_token_bytes = 2.0 * m.kv_dim() * w.kv_bits / 8;
  PhaseSeconds t;
  {
    const double tokens = static_cast<double>(w.prefill_microbatch * w.prompt_len);
    // QK^T and PV over the causal half of the s x s scores.
    double attention = 2.0 * w.prefill_microbatch * static_cast<double>(w.prompt_len) * w.prompt_len * m.hidden;
    double flops = 2.0 * linear * tokens + attention;
    double bytes = weights + tokens * (kv_token_bytes + 4.0 * m.hidden * kFp16Bytes);
    t.prefill = roofline(flops, bytes, rate, g, e);
  }
  {
    // Each decode step attends over the mean context length of the generation.
    const double ctx = w.prompt_len + w.new_tokens / 2.0;
    const double seqs = static_cast<double>(w.decode_microbatch);
    double flops = 2.0 * linear * seqs + 4.0 * seqs * ctx * m.hidden;
    double bytes = weights + seqs * ctx * kv_token_bytes;
    t.decode = roofline(flops, bytes, rate, g, e);
  }
  return t;
}

PhaseSeconds head_seconds(const ModelSpec& m, const Workload& w, const GpuSpec& g, const Efficiency& e) {
  const double params = static_cast<double>(m.vocab) * m.hidden;
  const double rate = g.fp16_tflops * 1e12;
  PhaseSeconds t;
  t.prefill = roofline(2.0 * params * w.prefill_microbatch, params * kFp16Bytes, rate, g, e);
  t.decode = roofline(2.0 * params * w.decode_microbatch, params * kFp16Bytes, rate, g, e);
  return t;
}

PhaseSeconds transfer_seconds(const ModelSpec& m, const Workload& w, double gbps) {
  PhaseSeconds t;
  t.prefill = static_cast<double>(w.prefill_microbatch * w.prompt_len * m.hidden * kFp16Bytes) / (gbps * 1e9);
  t.decode = static_cast<double>(w.decode_microbatch * m.hidden * kFp16Bytes) / (gbps * 1e9);
  return t;
}

}  // namespace fsq::plan
