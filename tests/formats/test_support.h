// Helpers for the formats tests: raw safetensors bytes, small configs.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/safetensors.h"
#include "temp_dir.h"

namespace fsq::test {

namespace fs = std::filesystem;

// Scratch folders (tests/support/temp_dir.h) named fsq-formats-test-*: the malformed-input
// tests expect that name in errors about the folder itself.
struct TempDir : ::fsq::testing::TempDir {
  TempDir() : ::fsq::testing::TempDir("fsq-formats-test") {}
};

inline void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << p;
}

inline std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

// Raw safetensors bytes: length prefix, header text, then `data_bytes` bytes of filler.
inline std::string safetensors_bytes(const std::string& header, size_t data_bytes) {
  return le64(header.size()) + header + std::string(data_bytes, '\x5a');
}

// Bytes of a vector as a span for TensorToWrite.
template <typename T>
std::span<const std::byte> as_bytes(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

// Byte equality that is fine with empty (null) buffers, unlike memcmp.
inline bool same_bytes(const std::byte* a, std::span<const std::byte> b) {
  return b.empty() || std::equal(b.begin(), b.end(), a);
}

// A valid LlamaForCausalLM config.json body; keys in `overrides` replace or add keys
// (a null value stands for "key absent" as far as the parser is concerned).
inline std::string llama_config(const nlohmann::json& overrides = nlohmann::json::object()) {
  nlohmann::json j = {{"architectures", nlohmann::json::array({"LlamaForCausalLM"})}, {"model_type", "llama"},
                      {"hidden_size", 64}, {"intermediate_size", 172}, {"num_hidden_layers", 2},
                      {"num_attention_heads", 8}, {"num_key_value_heads", 4}, {"vocab_size", 512},
                      {"max_position_embeddings", 512}, {"rms_norm_eps", 1e-05},
                      {"rope_theta", 10000.0}, {"tie_word_embeddings", true}, {"bos_token_id", 1},
                      {"eos_token_id", 2}, {"torch_dtype", "float32"}};
  j.update(overrides);
  return j.dump(2);
}

}  // namespace fsq::test
