// The one table of supported architectures (architectures.cpp): each is listed once with
// its Hugging Face and GGUF names, bias rules, supported activations and the layout of its
// decoder block (linears with roles and tensor names, norm -> linear groups). config.json
// and GGUF import, the runtime model and the quantizer passes all read it; nothing else
// branches on an architecture or module name. LibTorch-free (formats layer).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fsq {

// When a linear has a ".bias" tensor.
enum class BiasRule {
  kNever,
  kAlways,           // whatever config.json says (Qwen2 q/k/v; its config has no key for it)
  kIfAttentionBias,  // when config.json sets attention_bias (LLaMA/Mistral q/k/v/o)
};

// Which heads a linear's output rows belong to (rows = heads * head_dim), if any.
enum class OutputHeads { kNone, kQuery, kKeyValue };

// One linear layer of a decoder block. Names have "{layer}" for the block index and no
// ".weight"/".bias" suffix.
struct LinearSpec {
  std::string role;     // "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"
  std::string pattern;  // Hugging Face name, e.g. "model.layers.{layer}.self_attn.q_proj"
  std::string gguf;     // llama.cpp name, e.g. "blk.{layer}.attn_q"
  BiasRule bias = BiasRule::kNever;
  OutputHeads heads = OutputHeads::kNone;
  // The output goes through RoPE and then only into the q.k dot product (q/k projections):
  // GGUF files of some architectures store these rows permuted, and AWQ skips its clip
  // search here as AutoAWQ does (the attention scores are too sensitive to clipping).
  bool rotary_output = false;
};

// What consumes a group's outputs inside the layer.
enum class BlockKind {
  kAttention,  // self-attention up to o_proj (needs whole windows and RoPE positions)
  kMlp,        // the gated MLP (acts per token)
  kLinear,     // nothing but the group's linears themselves
};

// Linears that read the same input: the output of `norm` (or, for o_proj/down_proj, which
// have no norm in front of them, the input their producer feeds).
struct LinearGroup {
  std::string name;                // "attn_in", "mlp_in", "attn_out", "mlp_out"
  std::string norm;                // HF name of the preceding RMSNorm weight, "" if none
  std::vector<std::string> roles;  // roles of LinearSpec in this group
  BlockKind block = BlockKind::kLinear;
  // Without a norm: the linear whose output rows are this group's input one to one when
  // shapes allow ("v_proj" for o_proj, "up_proj" for down_proj); "" when none.
  std::string producer;
};

// A dense (non-linear) tensor's full names; "{layer}" for the block index.
struct TensorNames {
  std::string hf;    // "model.layers.{layer}.input_layernorm.weight"
  std::string gguf;  // "blk.{layer}.attn_norm.weight"
};

struct ArchSpec {
  std::string hf_name;     // config.json architectures[0], "LlamaForCausalLM"
  std::string model_type;  // config.json model_type (the default when the key is absent)
  // general.architecture that llama.cpp's converter writes for it. Several HF
  // architectures may share one (Mistral is converted as "llama"); a GGUF file imports as
  // the first table entry with its name.
  std::string gguf_arch;
  bool gguf_qk_permuted = false;  // llama.cpp permuted the rows of rotary_output linears
  std::vector<std::string> hidden_acts;  // config.json hidden_act values the runtime computes
  std::string layer_prefix;  // "model.layers.{layer}": every per-layer HF name starts with it
  TensorNames embed;           // "model.embed_tokens.weight"
  TensorNames final_norm;      // "model.norm.weight"
  TensorNames lm_head;         // "lm_head.weight" (absent when tied)
  TensorNames input_norm;      // "model.layers.{layer}.input_layernorm.weight"
  TensorNames post_attn_norm;  // "model.layers.{layer}.post_attention_layernorm.weight"
  std::vector<LinearSpec> linears;
  std::vector<LinearGroup> groups;

  const LinearSpec& linear(const std::string& role) const;  // throws if the role is unknown
  // Some linear always has a bias whatever config.json says (config.attention_bias is then
  // true and config.json has no attention_bias key).
  bool forced_attention_bias() const;
  // GGUF name -> HF name for every tensor of this layout ("blk.3.attn_q.bias" ->
  // "model.layers.3.self_attn.q_proj.bias"); "" when the name is not one of them. Sets
  // *linear (when given) to the linear whose weight or bias it is, else nullptr.
  std::string hf_name_of_gguf(const std::string& gguf_name, const LinearSpec** linear = nullptr) const;
};

// Every supported architecture, in table order.
const std::vector<ArchSpec>& all_arch_specs();
// Throws fsq::Error listing supported names when `hf_name` is unknown.
const ArchSpec& arch_spec_for(const std::string& hf_name);
const ArchSpec* find_arch_spec(const std::string& hf_name);  // nullptr when unknown
// The architecture a GGUF file with general.architecture `gguf_arch` imports as (the first
// entry naming it); nullptr when none does.
const ArchSpec* find_gguf_arch_spec(const std::string& gguf_arch);
// The distinct GGUF architecture names, in table order ("llama, qwen2").
std::vector<std::string> supported_gguf_architectures();
// Joins names with ", " for error messages.
std::string join_names(const std::vector<std::string>& names);
// Replaces "{layer}" in a pattern.
std::string layer_name(const std::string& pattern, int64_t layer);
// The module a weight tensor belongs to: "model.embed_tokens.weight" -> "model.embed_tokens";
// nullopt when `tensor` does not end in ".weight".
std::optional<std::string> weight_module_name(const std::string& tensor);

}  // namespace fsq
