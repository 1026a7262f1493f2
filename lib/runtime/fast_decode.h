// Decode without per-op framework dispatch: one token for each of up to 8 sequences runs
// through every decoder layer on raw f32 buffers (embedding row, RMSNorm, the linears'
// forward_rows, RoPE, KV-cache append, attention over the cached keys, SwiGLU, head).
// About 30 ATen operations per layer cost more than the arithmetic of a small model's
// layer at batch 1 (issue 22); here only the linears and attention use threads (OpenMP).
// LlamaModel::forward takes this path for cached single-token steps when it can, and the
// ATen layers stay the reference (tests/runtime/fast_decode_test.cpp compares the two).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fsq {

struct DecoderLayer;
struct KVCache;
struct ModelConfig;
struct RopeTables;
class Linear;
class QuantLinear;

// The parts of a loaded LlamaModel the fast path reads (owned by the model).
struct FastDecodeModel {
  const ModelConfig* config = nullptr;
  const at::Tensor* embedding = nullptr;   // [vocab, hidden]; undefined when packed
  const QuantLinear* packed_embedding = nullptr;  // the quantized embedding, or null
  const at::Tensor* final_norm = nullptr;  // [hidden]
  const Linear* lm_head = nullptr;
  const std::vector<DecoderLayer>* layers = nullptr;
};

class FastDecoder {
 public:
  static constexpr int64_t kMaxBatch = 8;  // cpu::kMaxGemvRows

  // Why this model cannot take the fast path ("" when it can): compute dtype other than
  // f32, a weight not contiguous f32 on the CPU, a linear without forward_rows.
  static std::string unsupported_reason(const FastDecodeModel& model);
  explicit FastDecoder(const FastDecodeModel& model) : m_(model) {}

  // True when this step fits the path: ids int64 [B, 1] with B <= kMaxBatch, and a cache
  // of B contiguous f32 sequences with room for one more position.
  bool accepts(const at::Tensor& ids, const KVCache& cache) const;
  // Runs one step at position cache.length (not advanced here): writes the new keys and
  // values into the cache and fp32 logits [B, vocab] into `logits`. `rope` must cover
  // cache.length + 1 positions.
  void step(const at::Tensor& ids, KVCache& cache, const RopeTables& rope, float* logits) const;

  // True when `count` positions of one sequence fit step_rows: 1 <= count <= kMaxBatch, a
  // batch-1 cache of contiguous f32 with room for them.
  bool accepts_rows(int64_t count, const KVCache& cache) const;
  // Runs ids[0, count) of one sequence at positions cache.length .. +count-1 (cache.length
  // not advanced here) as the `count` rows of every linear (speculative decoding's verify
  // pass): writes their keys and values, and row r attends over the cache up to its own
  // position with the single step's kernel. forward_rows gives each row the result it
  // gives alone (packed linears take the rows two at a time for that, fast_decode.cpp
  // alike_rows), so logits [count, vocab] row r equals, bit for bit, the logits of the
  // single step at that position after steps on ids[0, r). `rope` must cover
  // cache.length + count positions.
  void step_rows(const int64_t* ids, int64_t count, KVCache& cache, const RopeTables& rope, float* logits) const;

 private:
  // B rows: one position of each of B sequences, or (one_sequence) B positions of sequence 0.
  void run(const int64_t* ids, int64_t B, bool one_sequence, KVCache& cache, const RopeTables& rope,
           float* logits) const;
  FastDecodeModel m_;
};

}  // namespace fsq
