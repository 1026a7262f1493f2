// What the exporters of packed checkpoints to Hugging Face folders (AutoAWQ,
// compressed-tensors) share: dense tensors in the export's float dtype, and the folder itself.
#pragma once

#include <cstddef>
#include <deque>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formats/packed_checkpoint.h"
#include "formats/safetensors.h"

namespace fsq {

// `t` as `dtype` (F16 or F32), little-endian bytes. Throws fsq::Error(where, ...) naming the
// tensor when it is not a float tensor, or when an element is not finite in `dtype` (fp16's
// range ends at 65504). `format` names the export in the message ("an AutoAWQ model").
std::vector<std::byte> export_dense_tensor(const TensorView& t, DType dtype, const std::string& where,
                                           const std::string& format);

// The quantized embedding/head of `src` (fsq quantize --head-bits; PackedCheckpoint::
// head_matrices) dequantized into dense `dtype` tensors "<name>.weight", appended to
// `tensors` with their bytes kept in `storage`: the engines read embeddings and heads dense.
// Same checks as export_dense_tensor.
void add_dequantized_head(const PackedCheckpoint& src, DType dtype, const std::string& where,
                          const std::string& format, std::deque<std::vector<std::byte>>& storage,
                          std::vector<TensorToWrite>& tensors);

// Writes the folder `out` atomically (it appears whole or not at all): model.safetensors with
// `tensors` (metadata: format "pt", fsq_export = `export_name`, the source's sha256),
// config.json = `config`, and the source's tokenizer and generation files.
void write_export_folder(const PackedCheckpoint& src, const std::filesystem::path& out,
                         const std::vector<TensorToWrite>& tensors, const nlohmann::json& config,
                         const std::string& export_name);

}  // namespace fsq
