// Writes small random LLaMA-family checkpoints (config.json + model.safetensors) for unit
// tests, so tests do not depend on downloaded models.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace fsq::testing {

struct TinyModelSpec {
  std::string architecture = "LlamaForCausalLM";
  int64_t hidden = 32;
  int64_t intermediate = 48;
  int64_t layers = 2;
  int64_t heads = 4;
  int64_t kv_heads = 2;
  int64_t vocab = 64;
  int64_t max_positions = 128;
  bool tied = false;
  bool attention_bias = false;  // config.json attention_bias (LLaMA q/k/v/o biases)
  double rope_theta = 10000.0;
  uint32_t seed = 1;
  float weight_std = 0.2f;
  // Activation outliers (what SmoothQuant targets): the first `outlier_channels` hidden
  // channels of every decoder layer's two RMSNorm gains are `outlier_gain` times larger.
  int64_t outlier_channels = 0;
  float outlier_gain = 1.0f;
};

// Creates `dir` (and parents) and writes the checkpoint. Qwen2ForCausalLM gets q/k/v biases.
void write_tiny_model(const std::filesystem::path& dir, const TinyModelSpec& spec);

}  // namespace fsq::testing
