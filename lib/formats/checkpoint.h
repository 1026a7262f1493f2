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

class Checkpoint {
 public:
  // Opens and validates every shard; throws fsq::Error naming the file and the problem
  // (missing config.json, shard named in the index but absent, tensor listed in two shards,
  // index entry whose shard lacks the tensor, ...).
  static Checkpoint open(const std::filesystem::path& dir);

  const std::filesystem::path& dir() const { return dir_; }
  const ModelConfig& config() const { return config_; }
  const TensorView* find(const std::string& name) const;  // nullptr if absent
  const TensorView& get(const std::string& name) const;   // throws fsq::Error if absent
  std::vector<const TensorView*> tensors() const;          // sorted by name
  const std::vector<std::shared_ptr<const SafetensorsFile>>& shards() const { return shards_; }
  // sha256 over the shard files' hashes in name order (stable identity of the weights).
  std::string weights_sha256() const;

 private:
  std::filesystem::path dir_;
  ModelConfig config_;
  std::vector<std::shared_ptr<const SafetensorsFile>> shards_;
};

}  // namespace fsq
