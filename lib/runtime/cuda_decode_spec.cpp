#include "runtime/cuda_decode_spec.h"

#include <ATen/ATen.h>

#include <cmath>

#include "common/half.h"

#include "runtime/model.h"
#include "runtime/quant_linear.h"  // packed_embedding()->weights_view()

namespace fsq {
namespace {

// A dense f32 (or bf16/f16, as a checkpoint stores it) matrix [rows, cols] rounded to fp16
// into spec->half_weights, or why not.
std::string half_view(const at::Tensor& stored, const char* name, CudaDecodeSpec* spec, cuda::HalfWeightsView* view) {
  const bool floating = stored.defined() && (stored.scalar_type() == at::kFloat || stored.scalar_type() == at::kBFloat16 ||
                                             stored.scalar_type() == at::kHalf);
  if (!floating || !stored.device().is_cpu() || !stored.is_contiguous() || stored.dim() != 2)
    return std::string(name) + " is not an f32, bf16 or f16 matrix on the CPU";
  const at::Tensor w = stored.to(at::kFloat);  // exact; one matrix at a time
  const float* p = w.data_ptr<float>();
  const int64_t n = w.numel();
  std::vector<uint16_t> half(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (!(std::abs(p[i]) <= 65504.0f)) return std::string(name) + " holds a value beyond fp16's range";
    half[i] = f32_to_f16(p[i]);
  }
  spec->half_weights.push_back(std::move(half));
  *view = cuda::HalfWeightsView{spec->half_weights.back().data(), w.size(0), w.size(1)};
  return "";
}

// The view of a decoder layer's linear or the head: a packed uniform or LUT (SqueezeLLM)
// matrix, or a dense one rounded to fp16; or why the decoders cannot take it.
std::string packed_linear(const Linear& linear, CudaDecodeSpec* spec, cuda::DecodeLinear* out) {
  const LinearDeviceView d = linear.device_view();
  switch (d.kind) {
    case LinearDeviceView::Kind::Lut:
      if (d.has_bias) return linear.describe() + " has a bias";
      *out = cuda::DecodeLinear(d.lut);
      return "";
    case LinearDeviceView::Kind::Dense: {
      if (d.has_bias) return linear.describe() + " has a bias";
      cuda::HalfWeightsView view;
      if (std::string why = half_view(*d.dense, "a dense linear", spec, &view); !why.empty()) return why;
      *out = cuda::DecodeLinear(view);
      return "";
    }
    case LinearDeviceView::Kind::Uniform:
      if (d.has_bias) return linear.describe() + " has a bias";
      *out = cuda::DecodeLinear(d.uniform);
      return "";
    case LinearDeviceView::Kind::None: break;
  }
  return linear.describe() + " is neither a packed uniform, a LUT nor a dense linear";
}

bool f32_vector(const at::Tensor& t, int64_t size) {
  return t.defined() && t.scalar_type() == at::kFloat && t.device().is_cpu() && t.is_contiguous() && t.dim() == 1 &&
         t.size(0) == size;
}

}  // namespace

std::string make_cuda_decode_spec(const LlamaModel& model, int64_t positions, CudaDecodeSpec* out) {
  const ModelConfig& c = model.config();
  if (model.options().compute_dtype != at::kFloat) return "the CUDA decoder takes models loaded in f32 compute";
  if (model.integer_only()) return "integer-only checkpoints run on their own path";
  cuda::DecodeModelSpec& s = out->spec;
  s = {};
  out->half_weights.clear();
  s.hidden = c.hidden_size, s.intermediate = c.intermediate_size, s.heads = c.num_heads;
  s.kv_heads = c.num_kv_heads, s.head_dim = c.head_dim, s.vocab = c.vocab_size;
  s.rms_norm_eps = static_cast<float>(c.rms_norm_eps);
  if (model.packed_embedding() != nullptr) {
    s.embedding = model.packed_embedding()->weights_view();
  } else {
    cuda::HalfWeightsView view;
    if (std::string why = half_view(model.embedding(), "the embedding", out, &view); !why.empty()) return why;
    s.embedding = view;
  }
  const LinearDeviceView head = model.lm_head().device_view();
  if (head.kind == LinearDeviceView::Kind::Dense && model.packed_embedding() == nullptr &&
      head.dense->data_ptr() == model.embedding().data_ptr()) {
    s.head = s.embedding;  // tied: one fp16 copy
  } else if (std::string why = packed_linear(model.lm_head(), out, &s.head); !why.empty()) {
    return "lm_head: " + why;
  }
  if (!f32_vector(model.final_norm(), c.hidden_size)) return "the final norm is not f32 [hidden]";
  s.final_norm = model.final_norm().data_ptr<float>();
  for (const DecoderLayer& L : model.layers()) {
    cuda::DecodeLayerSpec layer;
    const struct {
      const Linear* from;
      cuda::DecodeLinear* to;
    } linears[] = {{L.q.get(), &layer.q},       {L.k.get(), &layer.k},   {L.v.get(), &layer.v},
                   {L.o.get(), &layer.o},       {L.gate.get(), &layer.gate}, {L.up.get(), &layer.up},
                   {L.down.get(), &layer.down}};
    for (const auto& lin : linears)
      if (std::string why = packed_linear(*lin.from, out, lin.to); !why.empty()) return why;
    if (!f32_vector(L.input_norm, c.hidden_size) || !f32_vector(L.post_attn_norm, c.hidden_size))
      return "a layer norm is not f32 [hidden]";
    layer.input_norm = L.input_norm.data_ptr<float>();
    layer.post_attn_norm = L.post_attn_norm.data_ptr<float>();
    s.layers.push_back(layer);
  }
  const RopeTables rope = model.rope(positions);
  const at::Tensor cos = rope.cos.narrow(0, 0, positions).to(at::kFloat).contiguous();
  const at::Tensor sin = rope.sin.narrow(0, 0, positions).to(at::kFloat).contiguous();
  out->rope_cos.assign(cos.data_ptr<float>(), cos.data_ptr<float>() + cos.numel());
  out->rope_sin.assign(sin.data_ptr<float>(), sin.data_ptr<float>() + sin.numel());
  s.rope_cos = out->rope_cos.data();
  s.rope_sin = out->rope_sin.data();
  s.rope_positions = positions;
  return cuda::decode_spec_problem(s, 1, positions);  // the kernels' own limits
}

}  // namespace fsq
