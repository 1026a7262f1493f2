#include "formats/export/gguf_hf_metadata.h"

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "formats/architectures.h"
#include "formats/export/gguf_hf_tokenizer.h"

namespace fsq {

std::string gguf_size_label(int64_t parameters) {
  const auto p = static_cast<double>(parameters);
  double scaled = p / 1e3;
  const char* suffix = "K";
  if (p >= 1e12) scaled = p / 1e12, suffix = "T";
  else if (p >= 1e9) scaled = p / 1e9, suffix = "B";
  else if (p >= 1e6) scaled = p / 1e6, suffix = "M";
  // As many decimals as make two significant digits (6.7B, 135M, 13B).
  const int whole_digits = static_cast<int>(std::to_string(static_cast<int64_t>(std::llround(scaled))).size());
  const int decimals = std::max(2 - whole_digits, 0);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f%s", decimals, scaled, suffix);
  return buf;
}

GgufMetadata gguf_metadata_for_hf(const std::filesystem::path& dir, const nlohmann::json& config_json,
                                  const ModelConfig& c, const std::string& name, int64_t parameters) {
  const ArchSpec& arch = arch_spec_for(c.architecture);
  const std::string where = (dir / "config.json").string();
  if (c.rope_scaling && c.rope_scaling->type != "linear")
    throw Error(where, "rope_scaling type '" + c.rope_scaling->type +
                           "' is not exported (llama.cpp stores it as a rope_freqs tensor fsq does not write); "
                           "supported: linear");
  const std::string p = arch.gguf_arch + ".";
  const bool llama = arch.gguf_arch == "llama";
  auto u32 = [](int64_t v) { return GgufValue{static_cast<uint32_t>(v)}; };
  GgufMetadata md = {
      {"general.architecture", GgufValue{arch.gguf_arch}},
      {"general.type", GgufValue{std::string("model")}},
      {"general.name", GgufValue{name}},
      {"general.size_label", GgufValue{gguf_size_label(parameters)}},
      {p + "block_count", u32(c.num_layers)},
      {p + "context_length", u32(c.max_position_embeddings)},
      {p + "embedding_length", u32(c.hidden_size)},
      {p + "feed_forward_length", u32(c.intermediate_size)},
      {p + "attention.head_count", u32(c.num_heads)},
      {p + "attention.head_count_kv", u32(c.num_kv_heads)},
      {p + "rope.freq_base", GgufValue{static_cast<float>(c.rope_theta)}},
      {p + "attention.layer_norm_rms_epsilon", GgufValue{static_cast<float>(c.rms_norm_eps)}},
      {"general.file_type", GgufValue{uint32_t{0}}},
  };
  // The LLaMA converter's own keys (Qwen2's derives the head size from the others).
  if (llama) {
    md.emplace_back(p + "vocab_size", u32(c.vocab_size));
    md.emplace_back(p + "rope.dimension_count", u32(c.head_dim));
  } else if (c.head_dim * c.num_heads != c.hidden_size) {
    md.emplace_back(p + "attention.key_length", u32(c.head_dim));
    md.emplace_back(p + "attention.value_length", u32(c.head_dim));
  }
  if (c.rope_scaling) {
    md.emplace_back(p + "rope.scaling.type", GgufValue{std::string("linear")});
    md.emplace_back(p + "rope.scaling.factor", GgufValue{static_cast<float>(c.rope_scaling->factor)});
  }
  for (auto& kv : gguf_tokenizer_metadata(dir, config_json, c.vocab_size, llama)) md.push_back(std::move(kv));
  return md;
}

}  // namespace fsq
