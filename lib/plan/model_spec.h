// The shape of a decoder-only model as the planner needs it: no weights, only sizes, from a
// config.json (LLaMA / Mistral / Qwen2, OPT, BLOOM) or a named preset of a published model.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace fsq::plan {

enum class Family {
  kLlama,  // RMSNorm, gated MLP (gate/up/down), no biases (Qwen2: q/k/v biases), RoPE
  kOpt,    // LayerNorm with bias, fc1/fc2 MLP, biases everywhere, learned positions (+2 offset)
  kBloom,  // LayerNorm with bias, 4h MLP, biases everywhere, ALiBi, a LayerNorm after the embedding
};

struct ModelSpec {
  std::string name;
  Family family = Family::kLlama;
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t ffn = 0;  // MLP inner width
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t vocab = 0;
  int64_t max_positions = 0;  // OPT's learned position table
  bool tied_embeddings = false;
  bool qkv_bias = false;  // Qwen2

  int64_t head_dim() const { return hidden / heads; }
  int64_t kv_dim() const { return head_dim() * kv_heads; }
};

// One quantizable linear of a decoder layer.
struct LinearShape {
  std::string name;
  int64_t in = 0;
  int64_t out = 0;
};

// The linears of one decoder layer, in the order of the HF module names.
std::vector<LinearShape> layer_linears(const ModelSpec& m);
int64_t layer_linear_params(const ModelSpec& m);
// Parameters of a layer that stay 16-bit: biases and norm weights.
int64_t layer_fp16_params(const ModelSpec& m);

std::vector<std::string> model_preset_names();
// "opt-13b", "llama-2-7b", ... (case-insensitive); throws fsq::Error listing the presets.
ModelSpec model_preset(const std::string& name);
// A HF config.json object; `source` names the file in errors.
ModelSpec model_spec_from_config(const nlohmann::json& j, const std::string& source);
// A model folder (its config.json) or a config.json file.
ModelSpec load_model_spec(const std::filesystem::path& path);

}  // namespace fsq::plan
