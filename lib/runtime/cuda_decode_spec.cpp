#include "runtime/cuda_decode_spec.h"

#include <ATen/ATen.h>

#include "runtime/lut_linear.h"
#include "runtime/model.h"
#include "runtime/quant_linear.h"

namespace fsq {
namespace {

// The packed uniform view of `linear`, or why it has none the decoders take.
std::string packed_view(const Linear& linear, cpu::UniformWeightsView* view) {
  const auto* quant = dynamic_cast<const QuantLinear*>(&linear);
  if (quant == nullptr) return linear.describe() + " is not a packed uniform linear";
  if (quant->has_bias()) return linear.describe() + " has a bias";
  *view = quant->weights_view();
  return "";
}

// The same for a decoder layer's linear, which may also be a LUT one (SqueezeLLM).
std::string packed_linear(const Linear& linear, cuda::DecodeLinear* out) {
  if (const auto* lut = dynamic_cast<const LutLinear*>(&linear)) {
    if (lut->has_bias()) return linear.describe() + " has a bias";
    *out = cuda::DecodeLinear(lut->weights_view());
    return "";
  }
  if (dynamic_cast<const QuantLinear*>(&linear) == nullptr)
    return linear.describe() + " is neither a packed uniform nor a LUT linear";
  cpu::UniformWeightsView view;
  if (std::string why = packed_view(linear, &view); !why.empty()) return why;
  *out = cuda::DecodeLinear(view);
  return "";
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
  if (model.packed_embedding() == nullptr) return "the embedding is not packed (quantize with --head-bits 4 or 8)";
  cuda::DecodeModelSpec& s = out->spec;
  s = {};
  s.hidden = c.hidden_size, s.intermediate = c.intermediate_size, s.heads = c.num_heads;
  s.kv_heads = c.num_kv_heads, s.head_dim = c.head_dim, s.vocab = c.vocab_size;
  s.rms_norm_eps = static_cast<float>(c.rms_norm_eps);
  s.embedding = model.packed_embedding()->weights_view();
  if (std::string why = packed_view(model.lm_head(), &s.head); !why.empty()) return "lm_head: " + why;
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
      if (std::string why = packed_linear(*lin.from, lin.to); !why.empty()) return why;
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
  return "";
}

}  // namespace fsq
