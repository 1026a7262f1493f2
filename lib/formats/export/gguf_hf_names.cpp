#include "formats/export/gguf_hf_names.h"

namespace fsq {
namespace {

// The decoder layer index of `hf` under the architecture's layer prefix; -1 for other names.
int64_t hf_layer_of(const ArchSpec& arch, const std::string& hf) {
  const std::string head = arch.layer_prefix.substr(0, arch.layer_prefix.find("{layer}"));
  if (!hf.starts_with(head)) return -1;
  size_t end = head.size();
  while (end < hf.size() && hf[end] >= '0' && hf[end] <= '9') ++end;
  if (end == head.size() || end - head.size() > 9 || end >= hf.size() || hf[end] != '.') return -1;
  return std::stoll(hf.substr(head.size(), end - head.size()));
}

}  // namespace

std::string gguf_name_of_hf(const ArchSpec& arch, const std::string& hf, const LinearSpec** linear) {
  if (linear) *linear = nullptr;
  for (const TensorNames* t : {&arch.embed, &arch.final_norm, &arch.lm_head})
    if (hf == t->hf) return t->gguf;
  const int64_t layer = hf_layer_of(arch, hf);
  if (layer < 0) return "";
  for (const TensorNames* t : {&arch.input_norm, &arch.post_attn_norm})
    if (hf == layer_name(t->hf, layer)) return layer_name(t->gguf, layer);
  for (const LinearSpec& l : arch.linears)
    for (const char* suffix : {".weight", ".bias"})
      if (hf == layer_name(l.pattern, layer) + suffix) {
        if (linear) *linear = &l;
        return layer_name(l.gguf, layer) + suffix;
      }
  return "";
}

int64_t gguf_permuted_head_dim(const ArchSpec& arch, const LinearSpec* linear, const ModelConfig& config) {
  if (!arch.gguf_qk_permuted || linear == nullptr || !linear->rotary_output) return 0;
  return config.head_dim;
}

}  // namespace fsq
