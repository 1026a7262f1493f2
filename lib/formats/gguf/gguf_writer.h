// GGUF v3 writer: metadata (typically copied from a source file, then edited) and tensors
// declared up front, their bytes produced one tensor at a time while the file streams out,
// so a model never needs to be held whole in memory. The file appears atomically.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "formats/gguf/gguf_reader.h"

namespace fsq {

struct GgufTensorDecl {
  std::string name;
  std::vector<int64_t> dims;  // ggml order: dims[0] is the contiguous dimension
  GgmlType type = GgmlType::F32;
};

class GgufWriter {
 public:
  // Sets `key`, in place when present (keeping the file's key order), else at the end.
  void set(const std::string& key, GgufValue value);
  void erase(const std::string& key);
  const GgufValue* find(const std::string& key) const;
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }

  // Throws fsq::Error when the name repeats or the element count is not whole blocks.
  void add_tensor(GgufTensorDecl decl);
  const std::vector<GgufTensorDecl>& tensors() const { return tensors_; }

  // Bytes of tensor i (ggml_nbytes of its type and element count).
  size_t tensor_bytes(size_t i) const;

  // Writes the header, then for each tensor in order calls fill(i, buffer) to produce its
  // bytes (buffer.size() == tensor_bytes(i)); temp file, fsync, rename. The alignment is
  // general.alignment when set (a power of two), else 32.
  using FillTensor = std::function<void(size_t index, std::span<std::byte> out)>;
  void write(const std::filesystem::path& path, const FillTensor& fill) const;

 private:
  uint64_t alignment() const;

  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<GgufTensorDecl> tensors_;
};

}  // namespace fsq
