// LLaMA-family decoder (LLaMA, Mistral, Qwen2) on at::Tensor: embedding, RMSNorm, RoPE
// (with llama3 scaling), grouped-query attention with a causal mask, SwiGLU MLP, tied or
// separate head, KV cache. Device-agnostic; layers are public so calibration can stream
// the model one decoder layer at a time.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "formats/checkpoint.h"
#include "formats/packed_checkpoint.h"
#include "formats/model_config.h"
#include "formats/architectures.h"
#include "runtime/decoder_layer.h"
#include "runtime/linear.h"
#include "runtime/rope.h"

namespace fsq {

class PackedCheckpoint;
class IntonlyStack;
class FastDecoder;
class QuantLinear;

struct RuntimeOptions {
  c10::ScalarType compute_dtype = c10::kFloat;     // activations and matmuls
  std::optional<c10::ScalarType> weight_dtype;      // weights kept in memory; default = compute
  c10::Device device = c10::Device(c10::kCPU);
  // A NaN/Inf in a dense weight fails the load naming the tensor (eval --allow-nonfinite
  // turns this off, to report what such a model computes).
  bool allow_nonfinite_weights = false;
  // An integer-only checkpoint (fsq quantize --method intonly) runs its decoder layers in
  // integers (runtime/intonly_model.h); false runs the same w8a8static linears on the float
  // path (float norms, RoPE, attention, SiLU), e.g. to compare the two.
  bool integer_only = true;
  // On that path, o_proj's and down_proj's inputs get a power-of-two scale per token, chosen
  // in integers (runtime/intonly_layer.h, IntonlyInputs::Token); false: I-BERT's static
  // per-tensor scales.
  bool intonly_token_inputs = true;
  // Cached single-token steps run through FastDecoder (runtime/fast_decode.h) when the
  // model allows; false keeps every step on the ATen layers (the reference).
  bool fast_decode = true;
  // On that path, 3-, 4- and 8-bit packed linears quantize their input to int8 per 32 columns
  // and multiply in integers (runtime/cpu/uniform_q8_kernels.h, as llama.cpp's Q8_0
  // activations; 3- and 4-bit LUT linears with int8 centroids, runtime/cpu/lut_q8_kernels.h),
  // where the CPU has a kernel for it; false keeps them in f32 (exact: the path the ATen
  // layers take). Prefill and perplexity never use it.
  bool int8_decode_activations = true;
  // Forward passes of more than cpu::kMaxGemvRows tokens (prompts, perplexity and
  // calibration windows) multiply the 2/3/4-bit and symmetric 8-bit packed linears on int8
  // activations likewise (cpu::uniform_gemm_q8, AVX-512 VNNI; 3- and 4-bit LUT linears with
  // int8 centroids, cpu::lut_gemm_q8; 3-bit codes also need VBMI) instead of dequantizing them into an f32 GEMM. Off by
  // default: it changes perplexity, and the f32 GEMM is the reference every quality table
  // so far used.
  bool int8_prefill_activations = false;
};

class LlamaModel {
 public:
  // Loads weights through DenseLinear; throws fsq::Error naming the tensor on a missing
  // tensor or a shape that disagrees with config.json.
  // With with_layers = false only the embedding, final norm, head and rotary tables are
  // loaded: layer-streaming callers fetch one decoder layer at a time with load_layer().
  // With `packed` (an fsq packed folder opened on the same directory), its quantized linears
  // run as QuantLinear from their packed bytes, as do its quantized embedding and head
  // (PackedCheckpoint::head_matrices); `ckpt` supplies every other tensor.
  static std::unique_ptr<LlamaModel> load(const Checkpoint& ckpt, const RuntimeOptions& opts,
                                          bool with_layers = true, const PackedCheckpoint* packed = nullptr);
  // Decoder layer `index` of the checkpoint (same checks as load()).
  DecoderLayer load_layer(const Checkpoint& ckpt, int64_t index) const;

  // Which positions get logits: all (perplexity), or the last one only (generation's
  // prompt, where the head over every position would cost a fifth of a small model's work).
  enum class Logits { All, Last };
  // ids: int64 [B, T]. Without a cache: positions 0..T-1. With a cache: positions
  // cache->length .. +T-1, then cache->length += T. Returns fp32 logits [B, T, vocab], or
  // [B, 1, vocab] for Logits::Last (the last row of All up to float rounding: the head may
  // take another kernel for one row than for many).
  // The integer-only path evaluates whole windows: with a cache it throws fsq::Error.
  at::Tensor forward(const at::Tensor& ids, KVCache* cache = nullptr, Logits which = Logits::All) const;

  // Speculative decoding's verify pass (runtime/fast_decode.h, FastDecoder::step_rows):
  // ids[0, count) of one sequence at positions cache.length .. +count-1 of a batch-1 cache,
  // run as the rows of each linear on the fast decode path; fills logits [count, vocab] and
  // advances cache.length by count. Row r equals bit for bit the logits forward() gives for
  // single-token steps on ids[0..r]. Returns false, running nothing, when the fast path
  // cannot take it (fast_decode_unavailable(), count outside [1, 8], no room, another cache).
  bool forward_positions(const int64_t* ids, int64_t count, KVCache& cache, float* logits) const;

  KVCache new_cache(int64_t batch, int64_t max_len) const;

  // Pieces for layer-streaming callers.
  at::Tensor embed(const at::Tensor& ids) const;         // [B, T, hidden] in compute dtype
  at::Tensor head(const at::Tensor& hidden) const;       // final norm + lm_head -> fp32 logits
  const std::vector<DecoderLayer>& layers() const { return layers_; }
  // The head's parts, for backends that run the model outside these layers
  // (runtime/cuda_decode_spec.h): the packed embedding (null when dense), norm and head.
  const QuantLinear* packed_embedding() const { return packed_embed_.get(); }
  const at::Tensor& embedding() const { return embed_; }  // undefined when packed
  const at::Tensor& final_norm() const { return final_norm_; }
  const Linear& lm_head() const { return *lm_head_; }
  // Rotary tables covering positions [0, end), built on first use; throws fsq::Error when
  // end exceeds max_position_embeddings.
  RopeTables rope(int64_t end) const { return rope_->tables(end); }
  int64_t rope_positions() const { return rope_->positions(); }  // built so far

  const ModelConfig& config() const { return cfg_; }
  const ArchSpec& arch() const { return *arch_; }
  const RuntimeOptions& options() const { return opts_; }
  int64_t parameter_count() const { return parameter_count_; }
  // How the matmuls run: each linear's describe() without its shape ("w8a8 smoothquant, int8
  // matmul, per-token int8 activations", "dense f32"), counted over the decoder layers and
  // the head, which is listed under its own "lm_head: ..." key.
  std::map<std::string, int64_t> matmul_kinds() const;
  // True when forward() runs the integer-only decoder layers; the ops in integers and in
  // floating point are then intonly_stack().integer_ops() / IntonlyStack::float_ops().
  bool integer_only() const { return intonly_ != nullptr; }
  const IntonlyStack& intonly_stack() const { return *intonly_; }  // only when integer_only()
  // "" when cached single-token steps take the fast decode path; otherwise why not.
  const std::string& fast_decode_unavailable() const { return fast_unavailable_; }
  // Linears (decoder layers and head) whose prompts and windows run on int8 activations
  // (RuntimeOptions::int8_prefill_activations), out of all of them.
  std::pair<int64_t, int64_t> int8_prefill_linears() const;
  // Linears (decoder layers and head) whose decode steps run on int8 activations
  // (RuntimeOptions::int8_decode_activations), out of all of them.
  std::pair<int64_t, int64_t> int8_decode_linears() const;
  ~LlamaModel();

 private:
  ModelConfig cfg_;
  const ArchSpec* arch_ = nullptr;
  RuntimeOptions opts_;
  at::Tensor embed_;       // [vocab, hidden]; undefined when packed_embed_ holds it
  // The embedding of a packed checkpoint quantized with --head-bits (looked up row by row,
  // and the head itself when tied); null when the embedding is dense.
  std::shared_ptr<const QuantLinear> packed_embed_;
  at::Tensor final_norm_;  // [hidden]
  std::shared_ptr<const Linear> lm_head_;
  std::vector<DecoderLayer> layers_;
  std::unique_ptr<RotaryCache> rope_;
  int64_t parameter_count_ = 0;
  const PackedCheckpoint* packed_ = nullptr;
  std::shared_ptr<const IntonlyStack> intonly_;  // set for integer-only checkpoints
  std::unique_ptr<FastDecoder> fast_;             // null when fast_unavailable_ says why
  std::string fast_unavailable_ = "the model was loaded without its layers";
};

}  // namespace fsq
