#include "tiny_model.h"

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "formats/safetensors.h"

namespace fsq::testing {
namespace {

struct TensorData {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

}  // namespace

void write_tiny_model(const std::filesystem::path& dir, const TinyModelSpec& s) {
  std::filesystem::create_directories(dir);
  const int64_t head_dim = s.hidden / s.heads;
  const bool qwen2 = s.architecture == "Qwen2ForCausalLM";
  std::mt19937 rng(s.seed);
  std::normal_distribution<float> normal(0.0f, s.weight_std);
  std::map<std::string, TensorData> tensors;
  auto random = [&](const std::string& name, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    TensorData t{shape, std::vector<float>(static_cast<size_t>(n))};
    for (float& v : t.values) v = normal(rng);
    tensors[name] = std::move(t);
  };
  auto norm = [&](const std::string& name) {
    TensorData t{{s.hidden}, std::vector<float>(static_cast<size_t>(s.hidden))};
    for (float& v : t.values) v = 1.0f + 0.1f * normal(rng);
    tensors[name] = std::move(t);
  };
  random("model.embed_tokens.weight", {s.vocab, s.hidden});
  norm("model.norm.weight");
  if (!s.tied) random("lm_head.weight", {s.vocab, s.hidden});
  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    norm(p + "input_layernorm.weight");
    norm(p + "post_attention_layernorm.weight");
    for (const char* gain : {"input_layernorm.weight", "post_attention_layernorm.weight"})
      for (int64_t c = 0; c < s.outlier_channels; ++c) tensors[p + gain].values[static_cast<size_t>(c)] *= s.outlier_gain;
    const int64_t q_out = s.heads * head_dim, kv_out = s.kv_heads * head_dim;
    random(p + "self_attn.q_proj.weight", {q_out, s.hidden});
    random(p + "self_attn.k_proj.weight", {kv_out, s.hidden});
    random(p + "self_attn.v_proj.weight", {kv_out, s.hidden});
    random(p + "self_attn.o_proj.weight", {s.hidden, q_out});
    if (qwen2 || s.attention_bias) {
      random(p + "self_attn.q_proj.bias", {q_out});
      random(p + "self_attn.k_proj.bias", {kv_out});
      random(p + "self_attn.v_proj.bias", {kv_out});
    }
    if (s.attention_bias && !qwen2) random(p + "self_attn.o_proj.bias", {s.hidden});
    random(p + "mlp.gate_proj.weight", {s.intermediate, s.hidden});
    random(p + "mlp.up_proj.weight", {s.intermediate, s.hidden});
    random(p + "mlp.down_proj.weight", {s.hidden, s.intermediate});
  }
  std::vector<TensorToWrite> out;
  for (const auto& [name, t] : tensors)
    out.push_back({name, DType::F32, t.shape,
                   std::span<const std::byte>(reinterpret_cast<const std::byte*>(t.values.data()),
                                              t.values.size() * sizeof(float))});
  write_safetensors(dir / "model.safetensors", out, {{"format", "pt"}});

  nlohmann::json cfg = {
      {"architectures", {s.architecture}},
      {"model_type", qwen2 ? "qwen2" : (s.architecture == "MistralForCausalLM" ? "mistral" : "llama")},
      {"hidden_size", s.hidden},
      {"intermediate_size", s.intermediate},
      {"num_hidden_layers", s.layers},
      {"num_attention_heads", s.heads},
      {"num_key_value_heads", s.kv_heads},
      {"vocab_size", s.vocab},
      {"max_position_embeddings", s.max_positions},
      {"rms_norm_eps", 1e-5},
      {"rope_theta", s.rope_theta},
      {"tie_word_embeddings", s.tied},
      {"attention_bias", s.attention_bias},
      {"torch_dtype", "float32"},
      {"bos_token_id", 1},
      {"eos_token_id", 2},
  };
  std::ofstream(dir / "config.json") << cfg.dump(2);
}

}  // namespace fsq::testing
