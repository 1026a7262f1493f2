#include "formats/architectures.h"

#include <string_view>

#include "common/error.h"

namespace fsq {
namespace {

constexpr const char* kLayer = "model.layers.{layer}";
constexpr const char* kGgufLayer = "blk.{layer}";

// The LLaMA decoder block (pre-norm self-attention with RoPE, SwiGLU MLP) that every
// supported architecture shares; they differ in names and bias rules only.
struct LlamaFamily {
  const char* hf_name;
  const char* model_type;
  const char* gguf_arch;
  bool gguf_qk_permuted;  // llama.cpp's LLaMA converter permutes Q/K rows for its "normal" RoPE
  BiasRule qkv_bias;      // q/k/v projections
  BiasRule o_bias;        // o_proj
};

// The table: one line per architecture.
constexpr LlamaFamily kArchitectures[] = {
    {"LlamaForCausalLM", "llama", "llama", true, BiasRule::kIfAttentionBias, BiasRule::kIfAttentionBias},
    // llama.cpp converts Mistral (v0.1-v0.3 layout) with its LLaMA converter: its GGUF files
    // say "llama" and import as LlamaForCausalLM, the same computation (the sliding window
    // is recorded, not applied).
    {"MistralForCausalLM", "mistral", "llama", true, BiasRule::kIfAttentionBias, BiasRule::kIfAttentionBias},
    {"Qwen2ForCausalLM", "qwen2", "qwen2", false, BiasRule::kAlways, BiasRule::kNever},
};

ArchSpec llama_family(const LlamaFamily& f) {
  const std::string hf = std::string(kLayer) + ".", gg = std::string(kGgufLayer) + ".";
  ArchSpec a;
  a.hf_name = f.hf_name;
  a.model_type = f.model_type;
  a.gguf_arch = f.gguf_arch;
  a.gguf_qk_permuted = f.gguf_qk_permuted;
  a.hidden_acts = {"silu"};
  a.layer_prefix = kLayer;
  a.embed = {"model.embed_tokens.weight", "token_embd.weight"};
  a.final_norm = {"model.norm.weight", "output_norm.weight"};
  a.lm_head = {"lm_head.weight", "output.weight"};
  a.input_norm = {hf + "input_layernorm.weight", gg + "attn_norm.weight"};
  a.post_attn_norm = {hf + "post_attention_layernorm.weight", gg + "ffn_norm.weight"};
  auto linear = [&](const char* module, const char* role, const char* gguf, BiasRule bias, OutputHeads heads,
                    bool rotary) {
    return LinearSpec{role, hf + module + "." + role, gg + gguf, bias, heads, rotary};
  };
  a.linears = {
      linear("self_attn", "q_proj", "attn_q", f.qkv_bias, OutputHeads::kQuery, true),
      linear("self_attn", "k_proj", "attn_k", f.qkv_bias, OutputHeads::kKeyValue, true),
      linear("self_attn", "v_proj", "attn_v", f.qkv_bias, OutputHeads::kKeyValue, false),
      linear("self_attn", "o_proj", "attn_output", f.o_bias, OutputHeads::kNone, false),
      linear("mlp", "gate_proj", "ffn_gate", BiasRule::kNever, OutputHeads::kNone, false),
      linear("mlp", "up_proj", "ffn_up", BiasRule::kNever, OutputHeads::kNone, false),
      linear("mlp", "down_proj", "ffn_down", BiasRule::kNever, OutputHeads::kNone, false),
  };
  a.groups = {
      {"attn_in", a.input_norm.hf, {"q_proj", "k_proj", "v_proj"}, BlockKind::kAttention, ""},
      {"attn_out", "", {"o_proj"}, BlockKind::kLinear, "v_proj"},
      {"mlp_in", a.post_attn_norm.hf, {"gate_proj", "up_proj"}, BlockKind::kMlp, ""},
      {"mlp_out", "", {"down_proj"}, BlockKind::kLinear, "up_proj"},
  };
  return a;
}

std::string with_layer(const std::string& pattern, const std::string& layer) {
  static const std::string kToken = "{layer}";
  std::string out = pattern;
  if (auto pos = out.find(kToken); pos != std::string::npos) out.replace(pos, kToken.size(), layer);
  return out;
}

// "blk.12.attn_q.weight" -> ("blk.{layer}.attn_q.weight", "12"); false for other names.
bool split_layer(std::string_view name, std::string_view prefix, std::string& pattern, std::string& layer) {
  const std::string_view head = prefix.substr(0, prefix.find("{layer}"));
  const std::string_view tail = prefix.substr(head.size() + 7);  // after "{layer}"
  if (name.substr(0, head.size()) != head) return false;
  size_t end = head.size();
  while (end < name.size() && name[end] >= '0' && name[end] <= '9') ++end;
  if (end == head.size()) return false;
  if (name.substr(end, tail.size()) != tail) return false;
  layer = std::string(name.substr(head.size(), end - head.size()));
  pattern = std::string(prefix) + std::string(name.substr(end + tail.size()));
  return true;
}

}  // namespace

const std::vector<ArchSpec>& all_arch_specs() {
  static const std::vector<ArchSpec> specs = [] {
    std::vector<ArchSpec> v;
    for (const LlamaFamily& f : kArchitectures) v.push_back(llama_family(f));
    return v;
  }();
  return specs;
}

const ArchSpec* find_arch_spec(const std::string& hf_name) {
  for (const auto& s : all_arch_specs())
    if (s.hf_name == hf_name) return &s;
  return nullptr;
}

const ArchSpec& arch_spec_for(const std::string& hf_name) {
  if (const ArchSpec* s = find_arch_spec(hf_name)) return *s;
  std::vector<std::string> names;
  for (const auto& s : all_arch_specs()) names.push_back(s.hf_name);
  throw Error("architecture '" + hf_name + "'", "not supported; supported: " + join_names(names));
}

const ArchSpec* find_gguf_arch_spec(const std::string& gguf_arch) {
  for (const auto& s : all_arch_specs())
    if (s.gguf_arch == gguf_arch) return &s;
  return nullptr;
}

std::vector<std::string> supported_gguf_architectures() {
  std::vector<std::string> names;
  for (const auto& s : all_arch_specs())
    if (find_gguf_arch_spec(s.gguf_arch) == &s) names.push_back(s.gguf_arch);
  return names;
}

const LinearSpec& ArchSpec::linear(const std::string& role) const {
  for (const auto& l : linears)
    if (l.role == role) return l;
  throw Error(hf_name, "no linear layer with role '" + role + "'");
}

bool ArchSpec::forced_attention_bias() const {
  for (const auto& l : linears)
    if (l.bias == BiasRule::kAlways) return true;
  return false;
}

std::string ArchSpec::hf_name_of_gguf(const std::string& gguf_name, const LinearSpec** linear) const {
  if (linear) *linear = nullptr;
  for (const TensorNames* t : {&embed, &final_norm, &lm_head})
    if (gguf_name == t->gguf) return t->hf;
  std::string pattern, layer;
  if (!split_layer(gguf_name, kGgufLayer, pattern, layer)) return "";
  for (const TensorNames* t : {&input_norm, &post_attn_norm})
    if (pattern == t->gguf) return with_layer(t->hf, layer);
  for (const LinearSpec& l : linears)
    for (const char* suffix : {".weight", ".bias"})
      if (pattern == l.gguf + suffix) {
        if (linear) *linear = &l;
        return with_layer(l.pattern + suffix, layer);
      }
  return "";
}

std::string join_names(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

std::string layer_name(const std::string& pattern, int64_t layer) { return with_layer(pattern, std::to_string(layer)); }

std::optional<std::string> weight_module_name(const std::string& tensor) {
  constexpr std::string_view kSuffix = ".weight";
  if (!tensor.ends_with(kSuffix)) return std::nullopt;
  return tensor.substr(0, tensor.size() - kSuffix.size());
}

}  // namespace fsq
