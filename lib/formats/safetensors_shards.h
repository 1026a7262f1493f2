// The weights of a Hugging Face style folder: one model.safetensors, or the shards that
// model.safetensors.index.json maps (as transformers reads them, a single file wins over an
// index). Source checkpoints (checkpoint.h) and fsq's packed folders (packed_checkpoint.h)
// both open their weights here.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "formats/safetensors.h"

namespace fsq {

inline constexpr const char* kSingleWeightsFile = "model.safetensors";
inline constexpr const char* kWeightsIndexFile = "model.safetensors.index.json";

class SafetensorsShards {
 public:
  // Maps and validates every file. A sharded set is cross-checked against its index both
  // ways (every mapped tensor is in its shard, every shard tensor is mapped, no tensor in two
  // shards or named twice in the index), so a mixed-up folder fails here instead of loading
  // the wrong weights. Throws one fsq::Error naming the file at fault.
  static SafetensorsShards open(const std::filesystem::path& dir);

  // model.safetensors, or the index of a sharded set.
  const std::filesystem::path& path() const { return path_; }
  bool sharded() const { return files_.size() > 1 || path_.filename() == kWeightsIndexFile; }
  const std::vector<std::shared_ptr<const SafetensorsFile>>& files() const { return files_; }  // file-name order
  const std::vector<const TensorView*>& tensors() const { return tensors_; }  // sorted by name
  const TensorView* find(const std::string& name) const;                     // nullptr if absent
  // The file that holds tensor `name`, or path() when none does: where a message about it points.
  const std::filesystem::path& file_of(const std::string& name) const;
  // MappedFile::drop_resident_pages of every file: the views stay valid.
  void drop_resident_pages() const;

 private:
  std::filesystem::path path_;
  std::vector<std::shared_ptr<const SafetensorsFile>> files_;
  std::vector<const TensorView*> tensors_;
  std::map<std::string, size_t> file_index_;  // tensor name -> position in files_
};

}  // namespace fsq
