// A Hugging Face checkpoint folder (config.json + model.safetensors or shards; F32, F16 or
// BF16 tensors) seen as the GGUF llama.cpp's convert_hf_to_gguf.py makes of it: tensors in
// the order it writes them (shard by shard, by name within a shard), renamed and, for
// LLaMA-family attention, with q/k rows permuted (gguf_hf_names.h); metadata and tokenizer
// as gguf_hf_metadata.h. Rows are decoded from the mapped files on demand, and each
// tensor's pages are given back once it is written.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "formats/checkpoint.h"
#include "formats/export/gguf_source.h"

namespace fsq {

class HfFolderSource : public GgufExportSource {
 public:
  // Opens and validates the folder (Checkpoint::open) and builds the metadata. Throws
  // fsq::Error naming the file for a tensor llama.cpp's layout has no name for, a dtype
  // other than F32/F16/BF16, or what gguf_metadata_for_hf refuses.
  explicit HfFolderSource(const std::filesystem::path& dir);

  const std::string& name() const override { return name_; }
  const GgufMetadata& metadata() const override { return metadata_; }
  const std::vector<GgufSourceTensor>& tensors() const override { return tensors_; }
  void read_rows(size_t i, int64_t first, int64_t count, float* out) const override;
  void release(size_t i) const override;
  std::vector<std::string> notes() const override;

  const Checkpoint& checkpoint() const { return checkpoint_; }
  bool has_tokenizer() const { return find("tokenizer.ggml.model") != nullptr; }

 private:
  struct Origin {
    const TensorView* view = nullptr;
    size_t shard = 0;
    int64_t permuted_head_dim = 0;  // 0: rows in HF order
  };
  Checkpoint checkpoint_;
  std::string name_;
  GgufMetadata metadata_;
  std::vector<GgufSourceTensor> tensors_;
  std::vector<Origin> origins_;
};

// Decodes `n` little-endian F32, F16 or BF16 elements to f32 (the safetensors dtypes a
// Hugging Face source holds); throws fsq::Error(where, ...) for other dtypes.
void decode_float_elements(DType dtype, const std::byte* src, float* dst, int64_t n, const std::string& where);

}  // namespace fsq
