// What `fsq export --format gguf` reads: a model seen as llama.cpp would hold it (GGUF
// tensor names, ggml dimension order, `<arch>.*` and tokenizer metadata), whatever it is
// stored as. Three sources: a llama.cpp .gguf (here), a Hugging Face folder
// (gguf_hf_source.h) and fsq's packed checkpoint (gguf_packed_source.h). The exporter asks
// for one tensor at a time (open_tensor, rows, release), so a model is never held whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "formats/gguf/ggml_types.h"
#include "formats/gguf/gguf_reader.h"

namespace fsq {

struct GgufSourceTensor {
  std::string name;            // GGUF name, "blk.3.attn_q.weight"
  GgmlType type = GgmlType::F32;  // as stored (F32/F16/BF16 for a Hugging Face source)
  std::vector<int64_t> dims;   // ggml order: dims[0] is the row length
  // The source holds this tensor in llama.cpp blocks of `type` already (a packed linear
  // whose grid is Q4_0/Q4_1/Q8_0): the export copies them (copy_blocks) instead of
  // choosing a type.
  bool carried = false;
  std::string note;  // why it is carried, or how (stderr note and --json); "" for none

  int64_t rows() const;  // elements / dims[0]
};

using GgufMetadata = std::vector<std::pair<std::string, GgufValue>>;

class GgufExportSource {
 public:
  virtual ~GgufExportSource() = default;

  virtual const std::string& name() const = 0;           // for messages: the path
  virtual const GgufMetadata& metadata() const = 0;       // copied into the output
  virtual const std::vector<GgufSourceTensor>& tensors() const = 0;  // in output order

  // Makes tensor i readable by read_rows / copy_blocks (a packed source unpacks it here),
  // and release(i) frees that and gives the mapped pages back. Called by one thread.
  virtual void open_tensor(size_t /*i*/) const {}
  virtual void release(size_t /*i*/) const {}
  // Rows [first, first + count) of open tensor i as f32 (dims[0] floats each). Thread-safe.
  virtual void read_rows(size_t i, int64_t first, int64_t count, float* out) const = 0;
  // The llama.cpp blocks of an open carried tensor (ggml_nbytes of its type and size).
  virtual void copy_blocks(size_t i, std::span<std::byte> out) const;
  // What a user should know about how the source was read (one line each, for stderr).
  virtual std::vector<std::string> notes() const { return {}; }

  const GgufValue* find(const std::string& key) const;         // nullptr when absent
  const GgufSourceTensor* find_tensor(const std::string& name) const;  // nullptr when absent
  size_t tensor_index(const std::string& name) const;          // throws when absent
  // "<general.architecture>.<suffix>" as an integer, `fallback` when absent.
  int64_t arch_int(const std::string& suffix, int64_t fallback) const;

 private:
  mutable std::unordered_map<std::string, size_t> key_index_, tensor_index_;  // built on first lookup
};

// A llama.cpp .gguf file (any type fsq dequantizes), which must outlive the source. Throws
// fsq::Error naming the file for a tensor type fsq cannot dequantize.
class GgufFileSource : public GgufExportSource {
 public:
  explicit GgufFileSource(const GgufFile& file);
  const std::string& name() const override { return file_->name(); }
  const GgufMetadata& metadata() const override { return file_->metadata(); }
  const std::vector<GgufSourceTensor>& tensors() const override { return tensors_; }
  void read_rows(size_t i, int64_t first, int64_t count, float* out) const override;
  const GgufFile& file() const { return *file_; }

 private:
  const GgufFile* file_;
  std::vector<GgufSourceTensor> tensors_;
};

}  // namespace fsq
