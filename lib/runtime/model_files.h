// A model on disk, opened for running: a Hugging Face folder, a .gguf file, or an fsq packed
// folder (fsq.json next to config.json; its quantized linears stay packed). Everything that
// runs a model (eval, generate) opens it through here, so all three work everywhere.
#pragma once

#include <filesystem>
#include <memory>

#include "formats/checkpoint.h"
#include "formats/packed_checkpoint.h"
#include "runtime/model.h"

namespace fsq {

struct ModelFiles {
  std::unique_ptr<Checkpoint> checkpoint;    // every dense tensor (and, for packed folders, the rest)
  std::unique_ptr<PackedCheckpoint> packed;  // set for fsq packed folders

  // Throws fsq::Error naming the path on anything malformed.
  static ModelFiles open(const std::filesystem::path& path);
  std::unique_ptr<LlamaModel> load(const RuntimeOptions& opts) const;
  const ModelConfig& config() const { return checkpoint->config(); }
  bool is_packed() const { return packed != nullptr; }
};

// True when `path` is a folder holding an fsq packed checkpoint (fsq.json).
bool is_packed_folder(const std::filesystem::path& path);

}  // namespace fsq
