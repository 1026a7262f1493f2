#include "formats/tensor_inventory.h"

#include <cstring>

#include "common/error.h"

namespace fsq {
namespace {

constexpr const char* kRotaryCacheSuffix = ".rotary_emb.inv_freq";

bool has_bias(const LinearSpec& l, const ModelConfig& cfg) {
  return l.bias == BiasRule::kAlways || (l.bias == BiasRule::kIfAttentionBias && cfg.attention_bias);
}

bool same_bytes(const TensorView& a, const TensorView& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.nbytes == b.nbytes &&
         (a.nbytes == 0 || std::memcmp(a.data, b.data, a.nbytes) == 0);
}

}  // namespace

std::set<std::string> expected_tensor_names(const ArchSpec& arch, const ModelConfig& cfg) {
  std::set<std::string> names{arch.embed.hf, arch.final_norm.hf};
  if (!cfg.tie_word_embeddings) names.insert(arch.lm_head.hf);
  for (int64_t i = 0; i < cfg.num_layers; ++i) {
    names.insert(layer_name(arch.input_norm.hf, i));
    names.insert(layer_name(arch.post_attn_norm.hf, i));
    for (const LinearSpec& l : arch.linears) {
      const std::string base = layer_name(l.pattern, i);
      names.insert(base + ".weight");
      if (has_bias(l, cfg)) names.insert(base + ".bias");
    }
  }
  return names;
}

TensorInventory take_tensor_inventory(const Checkpoint& ckpt, const std::set<std::string>& also_read) {
  const ModelConfig& cfg = ckpt.config();
  const ArchSpec& arch = arch_spec_for(cfg.architecture);
  const std::set<std::string> expected = expected_tensor_names(arch, cfg);
  TensorInventory inv;
  for (const TensorView* t : ckpt.tensors()) {
    if (expected.contains(t->name) || also_read.contains(t->name)) continue;
    if (t->name.ends_with(kRotaryCacheSuffix)) {
      inv.ignored.push_back({t->name, "rotary cache; recomputed from rope_theta"});
      continue;
    }
    // Some exporters save the tied head too. Only an exact copy is harmless: a different
    // one means the config and the weights disagree about which head the model has.
    if (cfg.tie_word_embeddings && t->name == arch.lm_head.hf) {
      const TensorView* embed = ckpt.find(arch.embed.hf);
      if (embed != nullptr && same_bytes(*t, *embed)) {
        inv.ignored.push_back({t->name, "copy of the tied embedding (tie_word_embeddings is true)"});
        continue;
      }
    }
    inv.unused.push_back(t->name);
  }
  return inv;
}

void check_no_unused_tensors(const Checkpoint& ckpt, const std::set<std::string>& also_read) {
  const TensorInventory inv = take_tensor_inventory(ckpt, also_read);
  if (inv.unused.empty()) return;
  const ModelConfig& cfg = ckpt.config();
  const std::string& first = inv.unused.front();
  std::string hint = "remove it or fix config.json";
  if (cfg.tie_word_embeddings && first == arch_spec_for(cfg.architecture).lm_head.hf)
    hint = "config.json sets tie_word_embeddings but this head differs from the embedding; set it to false or "
           "remove the tensor";
  throw Error(ckpt.dir().string(), "tensor " + quote_name(first) + " is not used by " + cfg.architecture +
                                       (inv.unused.size() > 1
                                            ? " (nor are " + std::to_string(inv.unused.size() - 1) + " more)"
                                            : std::string()) +
                                       "; fsq would ignore it silently: " + hint);
}

}  // namespace fsq
