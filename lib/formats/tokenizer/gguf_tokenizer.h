// The files a GGUF file's tokenizer becomes in a Hugging Face checkpoint folder
// (fsq convert): tokenizer.json for "gpt2" models, tokenizer.model for "llama" models,
// and tokenizer_config.json carrying the GGUF's BOS/EOS/add-BOS policy.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace fsq {

class GgufFile;

struct GgufTokenizerFiles {
  nlohmann::json tokenizer_json;    // null unless tokenizer.ggml.model is "gpt2"
  std::string sentencepiece_model;  // serialized ModelProto; empty unless "llama"
  nlohmann::json tokenizer_config;
};

// Throws fsq::Error as load_gguf_tokenizer does.
GgufTokenizerFiles gguf_tokenizer_files(const GgufFile& gguf);

}  // namespace fsq
