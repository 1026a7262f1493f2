#include "runtime/arch_spec.h"

#include "common/error.h"

namespace fsq {
namespace {

constexpr const char* kLayer = "model.layers.{layer}.";

std::vector<LinearSpec> llama_linears(bool qkv_bias_always) {
  auto attn = [&](const char* role, bool qkv) {
    // Qwen2 always has q/k/v biases and never others; LLaMA has q/k/v/o biases iff attention_bias.
    return LinearSpec{role, std::string(kLayer) + "self_attn." + role, qkv && qkv_bias_always, !qkv_bias_always};
  };
  auto mlp = [](const char* role) { return LinearSpec{role, std::string(kLayer) + "mlp." + role, false, false}; };
  return {attn("q_proj", true), attn("k_proj", true), attn("v_proj", true), attn("o_proj", false),
          mlp("gate_proj"),     mlp("up_proj"),       mlp("down_proj")};
}

ArchSpec llama_family(const std::string& hf_name, bool qkv_bias_always) {
  ArchSpec a;
  a.hf_name = hf_name;
  a.embed = "model.embed_tokens.weight";
  a.final_norm = "model.norm.weight";
  a.lm_head = "lm_head.weight";
  a.input_norm = std::string(kLayer) + "input_layernorm.weight";
  a.post_attn_norm = std::string(kLayer) + "post_attention_layernorm.weight";
  a.linears = llama_linears(qkv_bias_always);
  a.groups = {
      {"attn_in", a.input_norm, {"q_proj", "k_proj", "v_proj"}, "attention", ""},
      {"attn_out", "", {"o_proj"}, "linear", "v_proj"},
      {"mlp_in", a.post_attn_norm, {"gate_proj", "up_proj"}, "mlp", ""},
      {"mlp_out", "", {"down_proj"}, "linear", "up_proj"},
  };
  return a;
}

}  // namespace

const std::vector<ArchSpec>& all_arch_specs() {
  static const std::vector<ArchSpec> specs = {
      llama_family("LlamaForCausalLM", false),
      llama_family("MistralForCausalLM", false),
      llama_family("Qwen2ForCausalLM", true),
  };
  return specs;
}

const ArchSpec& arch_spec_for(const std::string& hf_name) {
  std::string names;
  for (const auto& s : all_arch_specs()) {
    if (s.hf_name == hf_name) return s;
    names += (names.empty() ? "" : ", ") + s.hf_name;
  }
  throw Error("architecture '" + hf_name + "'", "not supported; supported: " + names);
}

const LinearSpec& ArchSpec::linear(const std::string& role) const {
  for (const auto& l : linears)
    if (l.role == role) return l;
  throw Error(hf_name, "no linear layer with role '" + role + "'");
}

std::string layer_name(const std::string& pattern, int64_t layer) {
  static const std::string kToken = "{layer}";
  std::string out = pattern;
  auto pos = out.find(kToken);
  if (pos != std::string::npos) out.replace(pos, kToken.size(), std::to_string(layer));
  return out;
}

}  // namespace fsq
