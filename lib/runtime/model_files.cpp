#include "runtime/model_files.h"

namespace fsq {

bool is_packed_folder(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec) && std::filesystem::exists(path / kPackedManifestFile, ec);
}

ModelFiles ModelFiles::open(const std::filesystem::path& path) {
  ModelFiles files;
  if (is_packed_folder(path)) files.packed = std::make_unique<PackedCheckpoint>(PackedCheckpoint::open(path));
  files.checkpoint = std::make_unique<Checkpoint>(Checkpoint::open(path));
  return files;
}

std::unique_ptr<LlamaModel> ModelFiles::load(const RuntimeOptions& opts) const {
  return LlamaModel::load(*checkpoint, opts, /*with_layers=*/true, packed.get());
}

}  // namespace fsq
