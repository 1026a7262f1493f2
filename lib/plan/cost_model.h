// The planner's memory and latency cost models (LLM-PQ's, with roofline defaults).
//
// Memory: weights per layer at each width (bits/8 per weight plus the quant type's scales;
// biases and norms stay fp16), the embeddings on the first stage and the final norm and
// lm_head on the last (a copy of the embedding when tied: pipeline stages do not share
// memory), the KV cache of every sequence of the batch at kv_bits, and the peak temporaries
// of a prefill micro-batch and a decode micro-batch.
// Latency: one micro-batch through one layer takes max(FLOPs / compute rate, bytes moved /
// bandwidth), scaled by the efficiencies; prefill is FLOP-bound and decode byte-bound in
// practice, and the max picks whichever the shapes make it.
#pragma once

#include <cstdint>

#include "plan/gpu_specs.h"
#include "plan/model_spec.h"

namespace fsq::plan {

// Weight widths the planner assigns: 3 and 4 (group-wise, g128, fp16 scale and zero per
// group), 8 (per output channel, fp16 scale per row) and 16 (fp16).
constexpr int64_t kGroupSize = 128;
bool is_supported_width(int bits);

struct Workload {
  int64_t prompt_len = 512;
  int64_t new_tokens = 100;
  int64_t batch = 32;
  int kv_bits = 16;
  int64_t prefill_microbatch = 1;  // eta: sequences per prefill micro-batch
  int64_t decode_microbatch = 1;   // xi: sequences per decode micro-batch

  int64_t context() const { return prompt_len + new_tokens; }
  int64_t prefill_microbatches() const { return (batch + prefill_microbatch - 1) / prefill_microbatch; }
  int64_t decode_microbatches() const { return (batch + decode_microbatch - 1) / decode_microbatch; }
};

// ---- memory (bytes) ----
int64_t linear_weight_bytes(const LinearShape& l, int bits);
int64_t layer_weight_bytes(const ModelSpec& m, int bits);
// First stage: token embedding (+ OPT's position table, + BLOOM's embedding LayerNorm).
int64_t embedding_bytes(const ModelSpec& m);
// Last stage: final norm and lm_head (fp16).
int64_t head_bytes(const ModelSpec& m);
// K and V of every sequence of the batch over the whole context, one layer.
int64_t layer_kv_cache_bytes(const ModelSpec& m, const Workload& w);
// Largest fp16 temporaries of one layer for a prefill micro-batch (attention scores
// eta*heads*s*s, or the MLP's inner activations) and a decode micro-batch.
int64_t prefill_temp_bytes(const ModelSpec& m, const Workload& w);
int64_t decode_temp_bytes(const ModelSpec& m, const Workload& w);
// The last stage's fp16 logits of the larger micro-batch (one position per sequence).
int64_t logits_bytes(const ModelSpec& m, const Workload& w);

// ---- latency (seconds) ----
struct Efficiency {
  double compute = 0.6;  // fraction of the datasheet tensor rate reached by GEMMs
  double memory = 0.8;   // fraction of the datasheet bandwidth reached by streaming
};

struct PhaseSeconds {
  double prefill = 0;  // one prefill micro-batch (eta sequences of prompt_len tokens)
  double decode = 0;   // one decode step of one decode micro-batch (xi sequences)
};

// 8-bit layers compute at the faster of int8_tops (W8A8) and fp16_tflops; 3/4-bit layers
// dequantize into fp16 GEMMs. Every width reads its own packed bytes.
PhaseSeconds layer_seconds(const ModelSpec& m, const Workload& w, const GpuSpec& g, int bits, const Efficiency& e);
// Embedding lookup is negligible; the lm_head runs once per sequence per step.
PhaseSeconds head_seconds(const ModelSpec& m, const Workload& w, const GpuSpec& g, const Efficiency& e);
// Hidden states handed to the next stage over a link of `gbps` GB/s.
PhaseSeconds transfer_seconds(const ModelSpec& m, const Workload& w, double gbps);

}  // namespace fsq::plan
