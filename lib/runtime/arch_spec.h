// Architectures as data: tensor-name patterns and norm -> linear groups, keyed by the HF
// class name. Passes and the model read these tables; nothing branches on a model name.
#pragma once

#include <string>
#include <vector>

namespace fsq {

// One linear layer of a decoder block. `pattern` has "{layer}" for the block index.
struct LinearSpec {
  std::string role;     // "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"
  std::string pattern;  // weight name without ".weight", e.g. "model.layers.{layer}.self_attn.q_proj"
  bool bias = false;    // always has a ".bias" tensor (Qwen2 q/k/v)
  bool bias_if_attention_bias = false;  // has one when config.json sets attention_bias (LLaMA)
};

// Linears that read the same input: the output of `norm` (or of `source_linear`'s input
// for o_proj/down_proj, which have no norm in front of them).
struct LinearGroup {
  std::string name;                // "attn_in", "mlp_in", "attn_out", "mlp_out"
  std::string norm;                // pattern of the preceding RMSNorm weight, "" if none
  std::vector<std::string> roles;  // roles of LinearSpec in this group
  // What consumes the group's outputs inside the layer: "attention" (self-attention up to
  // o_proj), "mlp" (the SwiGLU MLP) or "linear" (nothing but the linears themselves).
  std::string block;
  // Without a norm: the linear whose output rows are this group's input one to one when
  // shapes allow ("v_proj" for o_proj, "up_proj" for down_proj); "" when none.
  std::string producer;
};

struct ArchSpec {
  std::string hf_name;         // "LlamaForCausalLM"
  std::string embed;           // "model.embed_tokens.weight"
  std::string final_norm;      // "model.norm.weight"
  std::string lm_head;         // "lm_head.weight" (absent when tied)
  std::string input_norm;      // "model.layers.{layer}.input_layernorm.weight"
  std::string post_attn_norm;  // "model.layers.{layer}.post_attention_layernorm.weight"
  std::vector<LinearSpec> linears;
  std::vector<LinearGroup> groups;

  const LinearSpec& linear(const std::string& role) const;  // throws if the role is unknown
};

// Throws fsq::Error listing supported names when `hf_name` is unknown.
const ArchSpec& arch_spec_for(const std::string& hf_name);
const std::vector<ArchSpec>& all_arch_specs();
// Replaces "{layer}" in a pattern.
std::string layer_name(const std::string& pattern, int64_t layer);

}  // namespace fsq
