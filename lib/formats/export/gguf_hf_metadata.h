// The general.* and <arch>.* keys llama.cpp's convert_hf_to_gguf.py writes for a LLaMA-family
// config.json, followed by the tokenizer's (gguf_hf_tokenizer.h). Shared by the Hugging Face
// folder and packed checkpoint sources of fsq export --format gguf.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "formats/export/gguf_source.h"
#include "formats/model_config.h"

namespace fsq {

// `dir` holds the tokenizer files; `name` becomes general.name; `parameters` (elements of
// every tensor written) gives general.size_label ("135M", "6.7B") as the converter rounds
// it. general.file_type is a placeholder (0) that the export sets in place. Throws
// fsq::Error naming config.json for what llama.cpp's LLaMA layout cannot hold here (llama3
// RoPE scaling needs a rope_freqs tensor), and as gguf_tokenizer_metadata does.
GgufMetadata gguf_metadata_for_hf(const std::filesystem::path& dir, const nlohmann::json& config_json,
                                  const ModelConfig& config, const std::string& name, int64_t parameters);

// The converter's size label: parameters scaled to K/M/B/T with at least two digits.
std::string gguf_size_label(int64_t parameters);

}  // namespace fsq
