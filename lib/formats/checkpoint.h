// A Hugging Face checkpoint directory: config.json plus model.safetensors or a sharded set
// described by model.safetensors.index.json. Tensors are zero-copy views.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "formats/model_config.h"
#include "formats/safetensors.h"

namespace fsq {

// Tensors a checkpoint owns in memory (e.g. dequantized from a GGUF file).
struct OwnedTensors {
  std::vector<TensorView> views;                // point into `buffers`
  std::vector<std::vector<float>> buffers;      // heap storage; moves keep pointers valid
};

class Checkpoint {
 public:
  // Opens and validates every shard; throws fsq::Error naming the file and the problem
  // (missing config.json, shard named in the index but absent, tensor listed in two shards,
  // index entry whose shard lacks the tensor, ...).
  // A path to a .gguf file is imported instead (formats/gguf/gguf_model.h).
  static Checkpoint open(const std::filesystem::path& dir);
  // A checkpoint whose tensors live in memory; `source` names it in messages.
  static Checkpoint from_memory(std::filesystem::path source, ModelConfig config, OwnedTensors tensors,
                                std::string weights_sha256);

  const std::filesystem::path& dir() const { return dir_; }
  const ModelConfig& config() const { return config_; }
  const TensorView* find(const std::string& name) const;  // nullptr if absent
  const TensorView& get(const std::string& name) const;   // throws fsq::Error if absent
  std::vector<const TensorView*> tensors() const;          // sorted by name
  const std::vector<std::shared_ptr<const SafetensorsFile>>& shards() const { return shards_; }
  // What keeps view `v` (one of this checkpoint's) readable: its shard, or the in-memory
  // tensors; a zero-copy tensor over v.data holds it. Null for a view not of this checkpoint.
  std::shared_ptr<const void> owner_of(const TensorView& v) const;
  // sha256 over the shard files' hashes in name order (stable identity of the weights).
  std::string weights_sha256() const;

 private:
  std::filesystem::path dir_;
  ModelConfig config_;
  std::vector<std::shared_ptr<const SafetensorsFile>> shards_;
  std::shared_ptr<const OwnedTensors> owned_;  // in-memory tensors (GGUF import), else null
  std::string known_sha256_;                   // set for in-memory checkpoints
};

}  // namespace fsq
