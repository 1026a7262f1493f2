#include "runtime/fast_decode.h"

#include <ATen/ATen.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <span>

#include "common/half.h"
#include "formats/model_config.h"
#include "runtime/cpu/decode_attention.h"
#include "runtime/cpu/silu.h"
#include "runtime/decoder_layer.h"
#include "runtime/linear.h"
#include "runtime/quant_linear.h"
#include "runtime/rope.h"

namespace fsq {
namespace {

// Attention of one step costs heads * keys * head_dim * 2 multiply-adds per sequence;
// below this, the threads' wake-up costs more than the split saves.
constexpr int64_t kParallelAttentionWork = int64_t{1} << 15;

bool f32_cpu_contiguous(const at::Tensor& t) {
  return t.defined() && t.device().is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous();
}

// A dense embedding table the step can read rows of: f32, or bf16/f16 as a checkpoint stores it.
bool embedding_rows_readable(const at::Tensor& t) {
  const auto type = t.defined() ? t.scalar_type() : at::kFloat;
  return t.defined() && t.device().is_cpu() && t.is_contiguous() && t.dim() == 2 &&
         (type == at::kFloat || type == at::kBFloat16 || type == at::kHalf);
}

// Row `id` of a dense embedding table into out[0, H) as f32 (16-bit rows widened exactly).
void embedding_row(const at::Tensor& table, int64_t id, int64_t H, float* out) {
  switch (table.scalar_type()) {
    case at::kBFloat16: {
      const auto* row = static_cast<const uint16_t*>(table.data_ptr()) + id * H;
      for (int64_t i = 0; i < H; ++i) out[i] = bf16_to_f32(row[i]);
      return;
    }
    case at::kHalf: {
      const auto* row = static_cast<const uint16_t*>(table.data_ptr()) + id * H;
      for (int64_t i = 0; i < H; ++i) out[i] = f16_to_f32(row[i]);
      return;
    }
    default: std::memcpy(out, table.data_ptr<float>() + id * H, static_cast<size_t>(H) * sizeof(float));
  }
}

// out[i] = x[i] / sqrt(mean(x^2) + eps) * weight[i], the mean taken in double.
void rms_norm_row(const float* x, const float* weight, int64_t n, double eps, float* out) {
  double squares = 0.0;
  for (int64_t i = 0; i < n; ++i) squares += static_cast<double>(x[i]) * x[i];
  const auto inv = static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i) out[i] = weight[i] * (x[i] * inv);
}

// HF's rotate_half rotation of one head vector in place: pairs (j, j + D/2).
void rope_head(float* x, const float* cos, const float* sin, int64_t D) {
  const int64_t half = D / 2;
  for (int64_t j = 0; j < half; ++j) {
    const float a = x[j], b = x[j + half];
    x[j] = a * cos[j] - b * sin[j];
    x[j + half] = b * cos[j + half] + a * sin[j + half];
  }
}

// Which cache sequence and position each activation row belongs to: a step runs one token
// of each of B sequences at one position; a multi-position step (step_rows) runs B
// positions of sequence 0, row r at start + r.
struct RowPlan {
  bool one_sequence = false;
  int64_t start = 0;
  int64_t sequence(int64_t r) const { return one_sequence ? 0 : r; }
  int64_t position(int64_t r) const { return one_sequence ? start + r : start; }
};

// The most rows one forward_rows call may take in a multi-position step so that each row
// gets, bit for bit, what it gets alone. The dense kernels keep each row's sums apart for
// any m (tests/runtime/cpu/dense_kernels_test.cpp); the packed int8 kernels choose their
// block of output rows, and so the order of the final horizontal sums, by m, alike only
// for m <= 2 (cpu/uniform_q8_loops.h), so packed linears take rows two at a time
// (tests/runtime/speculative/fast_rows_test.cpp checks both).
int64_t alike_rows(const Linear* l) {
  return dynamic_cast<const DenseLinear*>(l) != nullptr ? FastDecoder::kMaxBatch : 2;
}

// ys[j] = x W_j^T for the `count` linears reading the same input rows x [B, in]: together
// where they can run so, in calls of at most `chunk` rows.
void linear_rows(const Linear* const* linears, int count, const float* x, int64_t B, float* const* ys, int64_t chunk) {
  const int64_t in = linears[0]->in_features();
  for (int64_t i0 = 0; i0 < B; i0 += chunk) {
    const int64_t n = std::min(chunk, B - i0);
    float* y[3] = {};
    for (int j = 0; j < count; ++j) y[j] = ys[j] + i0 * linears[j]->out_features();
    if (count > 1 && forward_rows_together(std::span<const Linear* const>(linears, static_cast<size_t>(count)),
                                           x + i0 * in, n, std::span<float* const>(y, static_cast<size_t>(count))))
      continue;
    for (int j = 0; j < count; ++j) linears[j]->forward_rows(x + i0 * in, n, y[j]);
  }
}

// The rows per call for these linears: all B in a step of B sequences, else the fewest alike.
int64_t rows_per_call(const RowPlan& plan, std::initializer_list<const Linear*> linears, int64_t B) {
  if (!plan.one_sequence) return B;
  int64_t chunk = B;
  for (const Linear* l : linears) chunk = std::min(chunk, alike_rows(l));
  return chunk;
}

// The activations of one step, [batch, width] each, reused by every layer.
struct Buffers {
  std::vector<float> h, x, q, k, v, attn, proj, gate, up, scores;
  Buffers(const ModelConfig& c, int64_t B, int64_t keys) {
    const int64_t H = c.hidden_size, I = c.intermediate_size, D = c.head_dim;
    for (auto* b : {&h, &x, &proj}) b->resize(static_cast<size_t>(B * H));
    q.resize(static_cast<size_t>(B * c.num_heads * D));
    attn.resize(q.size());
    k.resize(static_cast<size_t>(B * c.num_kv_heads * D));
    v.resize(k.size());
    gate.resize(static_cast<size_t>(B * I));
    up.resize(gate.size());
    scores.resize(static_cast<size_t>(B * c.num_heads * keys));
  }
};

void attention_step(const DecoderLayer& L, const ModelConfig& c, KVCache& cache, int64_t index,
                    const RopeTables& rope, int64_t B, const RowPlan& plan, int64_t keys, Buffers& buf) {
  const int64_t H = c.hidden_size, D = c.head_dim, heads = c.num_heads, kv_heads = c.num_kv_heads;
  const int64_t cap = cache.capacity, rep = heads / kv_heads;
  for (int64_t b = 0; b < B; ++b) rms_norm_row(&buf.h[b * H], L.input_norm.data_ptr<float>(), H, c.rms_norm_eps, &buf.x[b * H]);
  const Linear* const qkv[] = {L.q.get(), L.k.get(), L.v.get()};
  float* const qkv_out[] = {buf.q.data(), buf.k.data(), buf.v.data()};
  linear_rows(qkv, 3, buf.x.data(), B, qkv_out, rows_per_call(plan, {L.q.get(), L.k.get(), L.v.get()}, B));
  float* k_cache = cache.k[index].data_ptr<float>();  // [batch, kv_heads, cap, D]
  float* v_cache = cache.v[index].data_ptr<float>();
  // Every row's keys and values go in before any row attends: in a multi-position step,
  // row r reads those of rows 0..r.
  int64_t work = 0;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t seq = plan.sequence(b), pos = plan.position(b);
    const float* cos = rope.cos.data_ptr<float>() + pos * D;
    const float* sin = rope.sin.data_ptr<float>() + pos * D;
    for (int64_t h = 0; h < heads; ++h) rope_head(&buf.q[(b * heads + h) * D], cos, sin, D);
    for (int64_t h = 0; h < kv_heads; ++h) {
      float* k = &buf.k[(b * kv_heads + h) * D];
      rope_head(k, cos, sin, D);
      const int64_t slot = ((seq * kv_heads + h) * cap + pos) * D;
      std::memcpy(k_cache + slot, k, static_cast<size_t>(D) * sizeof(float));
      std::memcpy(v_cache + slot, &buf.v[(b * kv_heads + h) * D], static_cast<size_t>(D) * sizeof(float));
    }
    work += heads * (pos + 1) * D;
  }
  // Each thread takes an equal share of the B * heads query heads, in order, and runs them
  // in runs that share a KV head, so that the kernel reads those keys and values once per
  // run: SmolLM2's 9 heads on 2 threads are runs of 3 + 2 and 1 + 3 heads (one task per
  // query head read every KV head 3 times; one per KV head left one thread with 2 of 3).
  // A head's result does not depend on the run it is in (the kernel keeps each head's sums
  // apart), so a multi-position step's rows equal single steps bit for bit.
  const bool parallel = work >= kParallelAttentionWork;
  const int64_t threads = parallel ? std::min<int64_t>(omp_get_max_threads(), B * heads) : 1;
  const int64_t total = B * heads;
  const cpu::CpuIsa isa = cpu::selected_cpu_isa();
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (int64_t t = 0; t < threads; ++t) {
    const int64_t end = total * (t + 1) / threads;
    for (int64_t first = total * t / threads; first < end;) {
      const int64_t b = first / heads, h = first % heads;
      const int64_t run = std::min(end - first, rep - h % rep);  // up to the next KV head
      const int64_t kv = (plan.sequence(b) * kv_heads + h / rep) * cap * D;
      cpu::DecodeAttentionArgs args;
      args.q = &buf.q[first * D];
      args.heads = run;
      args.keys = k_cache + kv;
      args.values = v_cache + kv;
      args.keys_count = plan.position(b) + 1;
      args.head_dim = D;
      args.scale = scale;
      args.scores = &buf.scores[first * keys];
      args.out = &buf.attn[first * D];
      cpu::decode_attention(args, isa);
      first += run;
    }
  }
  const Linear* const o[] = {L.o.get()};
  float* const o_out[] = {buf.proj.data()};
  linear_rows(o, 1, buf.attn.data(), B, o_out, rows_per_call(plan, {L.o.get()}, B));
  for (int64_t i = 0; i < B * H; ++i) buf.h[i] += buf.proj[i];
}

void mlp_step(const DecoderLayer& L, const ModelConfig& c, int64_t B, const RowPlan& plan, Buffers& buf) {
  const int64_t H = c.hidden_size;
  for (int64_t b = 0; b < B; ++b)
    rms_norm_row(&buf.h[b * H], L.post_attn_norm.data_ptr<float>(), H, c.rms_norm_eps, &buf.x[b * H]);
  const Linear* const gate_up[] = {L.gate.get(), L.up.get()};
  float* const gate_up_out[] = {buf.gate.data(), buf.up.data()};
  linear_rows(gate_up, 2, buf.x.data(), B, gate_up_out, rows_per_call(plan, {L.gate.get(), L.up.get()}, B));
  // Row by row: a row's SIMD tail then falls where it falls in a one-row step.
  const int64_t I = c.intermediate_size;
  for (int64_t b = 0; b < B; ++b) cpu::silu_mul(&buf.gate[b * I], &buf.up[b * I], I, cpu::selected_cpu_isa());
  const Linear* const down[] = {L.down.get()};
  float* const down_out[] = {buf.proj.data()};
  linear_rows(down, 1, buf.gate.data(), B, down_out, rows_per_call(plan, {L.down.get()}, B));
  for (int64_t i = 0; i < B * H; ++i) buf.h[i] += buf.proj[i];
}

}  // namespace

std::string FastDecoder::unsupported_reason(const FastDecodeModel& m) {
  if (m.packed_embedding == nullptr && !embedding_rows_readable(*m.embedding))
    return "the embedding is not f32, bf16 or f16 on the CPU";
  if (!f32_cpu_contiguous(*m.final_norm)) return "the final norm is not f32 on the CPU";
  if (!m.lm_head->supports_rows()) return "lm_head (" + m.lm_head->describe() + ") has no raw-row path";
  if (m.config->head_dim % 2 != 0) return "odd head_dim";
  for (const DecoderLayer& L : *m.layers) {
    if (!f32_cpu_contiguous(L.input_norm) || !f32_cpu_contiguous(L.post_attn_norm)) return "a norm is not f32 on the CPU";
    for (const Linear* lin : {L.q.get(), L.k.get(), L.v.get(), L.o.get(), L.gate.get(), L.up.get(), L.down.get()})
      if (!lin->supports_rows()) return lin->describe() + " has no raw-row path";
  }
  return "";
}

bool FastDecoder::accepts(const at::Tensor& ids, const KVCache& cache) const {
  if (ids.dim() != 2 || ids.size(1) != 1 || ids.size(0) < 1 || ids.size(0) > kMaxBatch) return false;
  if (ids.scalar_type() != at::kLong || !ids.device().is_cpu()) return false;
  if (cache.length + 1 > cache.capacity || cache.k.size() != m_.layers->size()) return false;
  for (size_t i = 0; i < cache.k.size(); ++i)
    if (!f32_cpu_contiguous(cache.k[i]) || !f32_cpu_contiguous(cache.v[i]) || cache.k[i].size(0) != ids.size(0))
      return false;
  return true;
}

void FastDecoder::run(const int64_t* id, int64_t B, bool one_sequence, KVCache& cache, const RopeTables& rope,
                      float* logits) const {
  const ModelConfig& c = *m_.config;
  const int64_t H = c.hidden_size, vocab = c.vocab_size;
  const RowPlan plan{one_sequence, cache.length};
  const int64_t keys = plan.position(B - 1) + 1;  // the most keys a row attends to
  Buffers buf(c, B, keys);
  for (int64_t b = 0; b < B; ++b) {
    check_token_id(id[b], vocab);
    if (m_.packed_embedding)
      m_.packed_embedding->dequantize_row(id[b], &buf.h[b * H]);
    else
      embedding_row(*m_.embedding, id[b], H, &buf.h[b * H]);
  }
  for (size_t i = 0; i < m_.layers->size(); ++i) {
    const DecoderLayer& L = (*m_.layers)[i];
    attention_step(L, c, cache, static_cast<int64_t>(i), rope, B, plan, keys, buf);
    mlp_step(L, c, B, plan, buf);
  }
  for (int64_t b = 0; b < B; ++b)
    rms_norm_row(&buf.h[b * H], m_.final_norm->data_ptr<float>(), H, c.rms_norm_eps, &buf.x[b * H]);
  const Linear* const head[] = {m_.lm_head};
  float* const head_out[] = {logits};
  linear_rows(head, 1, buf.x.data(), B, head_out, rows_per_call(plan, {m_.lm_head}, B));
}

void FastDecoder::step(const at::Tensor& ids, KVCache& cache, const RopeTables& rope, float* logits) const {
  const at::Tensor ids_cpu = ids.contiguous();
  run(ids_cpu.data_ptr<int64_t>(), ids.size(0), false, cache, rope, logits);
}

bool FastDecoder::accepts_rows(int64_t count, const KVCache& cache) const {
  if (count < 1 || count > kMaxBatch || cache.length + count > cache.capacity) return false;
  if (cache.k.size() != m_.layers->size()) return false;
  for (size_t i = 0; i < cache.k.size(); ++i)
    if (!f32_cpu_contiguous(cache.k[i]) || !f32_cpu_contiguous(cache.v[i]) || cache.k[i].size(0) != 1) return false;
  return true;
}

void FastDecoder::step_rows(const int64_t* ids, int64_t count, KVCache& cache, const RopeTables& rope,
                            float* logits) const {
  run(ids, count, true, cache, rope, logits);
}

}  // namespace fsq
