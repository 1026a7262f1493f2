// A whole decode step on the CUDA backend: a LLaMA-family model whose linears are packed
// uniform, LUT (SqueezeLLM, with its CSR part) or fp16 matrices and whose embedding and head
// are packed uniform or fp16 ones, one token for each of up to 16 sequences per step, with
// the KV cache on the device and the step captured once in a CUDA graph and replayed
// (DeviceDecoder). ReferenceDecoder runs the same step, in the same order, on the host
// references of every op (decode_ops.h, cpu::uniform_matmul_reference): it is the spec the
// device decoder is tested against, and it is itself tested against the CPU runtime.
// No CUDA or LibTorch types here (runtime/cuda_decode_spec.h builds a spec from a loaded model).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/cpu/lut_kernels.h"
#include "runtime/cpu/uniform_kernels.h"
#include "runtime/cuda/decode_ops.h"
#include "runtime/cuda/dense_gemv.h"

namespace fsq::cuda {

// One weight matrix of the step: a packed uniform one, a LUT one (with its CSR part, which the
// loader has checked: cpu::check_lut_sparse), or fp16 values.
struct DecodeLinear {
  enum class Kind { Uniform, Lut, Half };
  Kind kind = Kind::Uniform;
  cpu::UniformWeightsView uniform;
  cpu::LutWeightsView lut;
  HalfWeightsView half;
  DecodeLinear() = default;
  DecodeLinear(const cpu::UniformWeightsView& w) : uniform(w) {}  // NOLINT: a view is a linear
  DecodeLinear(const cpu::LutWeightsView& w) : kind(Kind::Lut), lut(w) {}  // NOLINT
  DecodeLinear(const HalfWeightsView& w) : kind(Kind::Half), half(w) {}  // NOLINT
  int64_t rows() const { return kind == Kind::Lut ? lut.rows : kind == Kind::Half ? half.rows : uniform.rows; }
  int64_t cols() const { return kind == Kind::Lut ? lut.cols : kind == Kind::Half ? half.cols : uniform.cols; }
  // The matrix's first array: two linears with the same one are the same matrix (a tied head).
  const void* data() const {
    return kind == Kind::Lut ? static_cast<const void*>(lut.words)
                             : kind == Kind::Half ? static_cast<const void*>(half.data) : uniform.words;
  }
};

// One decoder layer: host pointers, valid while the spec is used.
struct DecodeLayerSpec {
  DecodeLinear q, k, v, o, gate, up, down;
  const float* input_norm = nullptr;      // [hidden]
  const float* post_attn_norm = nullptr;  // [hidden]
};

struct DecodeModelSpec {
  int64_t hidden = 0, intermediate = 0, heads = 0, kv_heads = 0, head_dim = 0, vocab = 0;
  float rms_norm_eps = 1e-5f;
  DecodeLinear embedding;  // [vocab, hidden], uniform or fp16
  DecodeLinear head;       // [vocab, hidden], uniform or fp16 (the embedding again when tied)
  const float* final_norm = nullptr;  // [hidden]
  std::vector<DecodeLayerSpec> layers;
  // Rotary tables [rope_positions, head_dim] (rotate_half layout, as runtime/rope.h builds).
  const float* rope_cos = nullptr;
  const float* rope_sin = nullptr;
  int64_t rope_positions = 0;
};

// Why the decoders cannot run `spec` with `batch` sequences of `capacity` positions ("" when
// they can): inconsistent shapes or views, no layers, sizes the GEMVs refuse (columns and
// groups multiples of 32, rows of x multiples of 8 values, U16 CSR columns beyond 65536), rotary tables shorter than the
// capacity, attention limits (attention_shape_problem), batch outside 1..kMaxGemvBatch.
std::string decode_spec_problem(const DecodeModelSpec& spec, int64_t batch, int64_t capacity);

// One step's interface, shared by both decoders: ids [batch] (host) at position `pos` (the
// positions before it were filled by earlier steps), fp32 logits [batch, vocab] out (host).
// Returns "" or what went wrong; a position outside 0 .. capacity - 1 or an id outside the
// vocabulary is refused before anything runs.
class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual std::string step(const int32_t* ids, int64_t pos, float* logits) = 0;
};

// The host spec of the step. Keeps pointers into `spec` (not a copy of the weights).
class ReferenceDecoder final : public Decoder {
 public:
  // Throws nothing: check decode_spec_problem first (the constructor asserts it is "").
  ReferenceDecoder(const DecodeModelSpec& spec, int64_t batch, int64_t capacity, ActType act);
  ~ReferenceDecoder() override;
  std::string step(const int32_t* ids, int64_t pos, float* logits) override;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Uploads the spec's weights, norms and rotary tables to device 0 and allocates the caches
// and buffers; "" and *out set, or why not (no device, out of memory, decode_spec_problem).
// use_graph = false launches every op on each step instead of replaying the captured graph.
std::string make_device_decoder(const DecodeModelSpec& spec, int64_t batch, int64_t capacity, ActType act,
                                bool use_graph, std::unique_ptr<Decoder>* out);

}  // namespace fsq::cuda
