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

// The tokenizer.ggml.pre name llama.cpp gives a byte-level BPE tokenizer.json with this
// normalizer and pre_tokenizer ("gpt-2", "smollm", "llama-bpe", "qwen2": the inverse of the
// table load_gguf_tokenizer reads); "" when it is none of them. llama.cpp's converter
// recognizes a tokenizer by hashing its output on a test text; fsq by its structure.
std::string gguf_pre_of_tokenizer_json(const nlohmann::json& normalizer, const nlohmann::json& pre_tokenizer);

}  // namespace fsq
