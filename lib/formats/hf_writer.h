// Writes a Hugging Face checkpoint folder (config.json, model.safetensors,
// generation_config.json, tokenizer files) that transformers loads. The folder appears
// whole or not at all: it is written beside the destination and renamed into place.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "formats/checkpoint.h"
#include "formats/dtype.h"

namespace fsq {

nlohmann::json model_config_to_json(const ModelConfig& c);

struct HfWriteOptions {
  DType dtype = DType::BF16;        // F32 or BF16 (F16 too) for the weights
  nlohmann::json tokenizer_json;    // written as tokenizer.json when not null
  nlohmann::json tokenizer_config;  // written as tokenizer_config.json when not null
  std::string source_note;          // stored in the safetensors __metadata__ ("source")
};

// Throws fsq::Error when `out` exists and is not empty, or on any write failure (nothing
// is left behind then).
void write_hf_checkpoint(const Checkpoint& src, const std::filesystem::path& out, const HfWriteOptions& opts);

}  // namespace fsq
