// safetensors reader (mmap, zero-copy, fully validated before use) and atomic writer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/mapped_file.h"
#include "formats/dtype.h"

namespace fsq {

// A read-only view of one tensor's bytes inside a mapped file (little-endian, row-major).
// "[576, 576]": a shape as error messages print it.
std::string shape_text(const std::vector<int64_t>& shape);

struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const std::byte* data = nullptr;
  size_t nbytes = 0;

  int64_t numel() const;
};

class SafetensorsFile {
 public:
  // Maps and validates the whole file; throws fsq::Error("<path>", "<problem>") on any defect.
  static std::shared_ptr<const SafetensorsFile> open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return file_.path(); }
  const std::vector<TensorView>& tensors() const { return tensors_; }  // in file order
  const TensorView* find(const std::string& name) const;               // nullptr if absent
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // MappedFile::drop_resident_pages: the views stay valid.
  void drop_resident_pages() const { file_.drop_resident_pages(); }

  explicit SafetensorsFile(MappedFile file);  // use open()

 private:
  MappedFile file_;
  std::vector<TensorView> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// A tensor to write: bytes are copied as given (little-endian, row-major).
struct TensorToWrite {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::span<const std::byte> data;
};

// A tensor's entry in a safetensors header: what it is and how many bytes its data takes.
struct TensorLayout {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t nbytes = 0;
};

// The bytes a file starts with: the 8-byte header length, then the JSON header (padded with
// spaces so the data section starts 8-byte aligned) with the tensors' data laid out one after
// the other in the given order, which must be sorted by name. Throws fsq::Error naming
// `where` on invalid input (empty, reserved, non-UTF-8 or repeated name, a shape that does
// not match nbytes). A streaming writer writes this, then each tensor's bytes in order.
// With `header_bytes` (a multiple of 8), the JSON is padded with spaces so that the result is
// exactly that long: a writer that fills the data section before the metadata is final
// reserves room for it (throws fsq::Error naming `where` when the header needs more).
std::string safetensors_header(const std::vector<TensorLayout>& sorted_tensors,
                               const std::map<std::string, std::string>& metadata, const std::string& where,
                               size_t header_bytes = 0);

// Writes atomically (temp file + fsync + rename + fsync dir). Tensors are stored sorted by
// name; the data section starts 8-byte aligned. Throws fsq::Error on invalid input.
void write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace fsq
