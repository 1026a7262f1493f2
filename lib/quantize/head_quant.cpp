#include "quantize/head_quant.h"

#include <ATen/ATen.h>

#include "common/error.h"
#include "formats/quant/uniform_reference.h"
#include "runtime/torch_bridge.h"

namespace fsq {

std::optional<UniformQuant> head_quant_for_bits(int bits) {
  switch (bits) {
    case 8: return UniformQuant{8, 64, true};
    case 4: return UniformQuant{4, 32, false};
    case 16: return std::nullopt;
    default: break;
  }
  throw Error("--head-bits", "the embedding and head take 4, 8 or 16 (not quantized) bits, not " + std::to_string(bits));
}

std::set<std::string> head_weight_names(const ArchSpec& arch, const Checkpoint& ckpt) {
  std::set<std::string> names = {arch.embed.hf};
  if (!ckpt.config().tie_word_embeddings && ckpt.find(arch.lm_head.hf) != nullptr) names.insert(arch.lm_head.hf);
  return names;
}

QuantizedLinearToWrite quantize_head_matrix(const TensorView& weight, const UniformQuant& quant) {
  if (weight.shape.size() != 2) throw Error(weight.name, "expected a matrix");
  const int64_t rows = weight.shape[0], cols = weight.shape[1];
  const at::Tensor w = tensor_from_view(weight, at::kFloat, c10::Device(c10::kCPU)).contiguous();
  QuantizedLinearToWrite out{weight_module_name(weight.name).value_or(weight.name), quantize_uniform(w.data_ptr<float>(), rows, cols, quant_for_columns(quant, cols)),
                             "rtn", {{"role", "embedding_and_head"}}, std::nullopt};
  return out;
}

}  // namespace fsq
