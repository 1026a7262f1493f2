// config.json -> ModelConfig for the architectures of formats/architectures.h.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace fsq {

struct RopeScaling {
  std::string type;  // "llama3", "linear", "dynamic" (only llama3 and linear are applied)
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
};

struct ModelConfig {
  std::string architecture;  // HF class name, e.g. "LlamaForCausalLM"
  std::string model_type;    // "llama", "mistral", "qwen2"
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;  // hidden_size / num_heads unless given
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 2048;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  std::optional<RopeScaling> rope_scaling;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // config.json attention_bias, or true where the architecture forces biases
  std::string torch_dtype = "float32";
  int64_t bos_token_id = -1;
  int64_t eos_token_id = -1;
  std::optional<int64_t> sliding_window;  // Mistral; recorded, not applied
};

// HF architecture names of the table in formats/architectures.h, in its order.
const std::vector<std::string>& supported_architectures();

// Validates fields (positive sizes, heads divide hidden, kv heads divide heads, ...);
// `source` names the file in error messages.
ModelConfig parse_model_config(const nlohmann::json& j, const std::string& source);
// Reads and parses; throws fsq::Error("<path>", ...) for a missing/unreadable/bad file.
ModelConfig load_model_config(const std::filesystem::path& config_json);

}  // namespace fsq
