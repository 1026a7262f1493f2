// GGUF (llama.cpp) -> the model fsq runs: llama.cpp tensor names and `<arch>.*` metadata
// map to Hugging Face names and ModelConfig; weights are dequantized to f32 with the
// scalar reference dequantizers; llama.cpp's Q/K row permutation is undone so the one
// runtime (HF rotate_half RoPE) runs both layouts.
#pragma once

#include <filesystem>
#include <string>

#include "formats/architectures.h"
#include "formats/checkpoint.h"
#include "formats/model_config.h"

namespace fsq {

class GgufFile;

bool is_gguf_path(const std::filesystem::path& path);  // an existing regular file ending in .gguf

// Throws fsq::Error naming the file and key for a missing architecture key, an unsupported
// architecture, or inconsistent sizes.
ModelConfig model_config_from_gguf(const GgufFile& gguf);

// HF tensor name for a llama.cpp tensor name of `arch` ("blk.3.attn_q.weight" ->
// "model.layers.3.self_attn.q_proj.weight"); throws for names fsq does not know. Sets
// *linear (when given) to the linear whose weight or bias it is, else nullptr.
std::string hf_tensor_name(const ArchSpec& arch, const std::string& gguf_name, const std::string& source,
                           const LinearSpec** linear = nullptr);

// Opens, validates, dequantizes and renames; weights_sha256() is the GGUF file's sha256.
Checkpoint checkpoint_from_gguf(const std::filesystem::path& path);

}  // namespace fsq
