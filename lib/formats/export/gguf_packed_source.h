// fsq's packed checkpoint (fsq quantize; FORMAT.md) seen as a GGUF: every quantized linear
// whose grid is one of llama.cpp's block types is carried over as those blocks, its codes
// and scales bit for bit:
//   w4g32s (4-bit, groups of 32, symmetric, w = (q - 8) s)   -> Q4_0 (d = s, the same q)
//   w8g32s (8-bit, groups of 32, symmetric, w = (q - 128) s) -> Q8_0 (d = s, q - 128 as int8)
//   w4g32a (4-bit, groups of 32, w = (q - z) s)              -> Q4_1 (d = s, m = -z s, the same q)
// Q4_1 stores m as fp16, and -z s (an integer up to 15 times an fp16) does not always fit
// one: m is then rounded to the nearest fp16, and every weight of that group moves by the
// same amount, at most half an fp16 ulp of z s (notes() counts the groups). Any other grid
// is refused. Dense tensors (norms, biases, and the embedding and head when not quantized,
// or quantized on another grid: then decoded exactly as fsq decodes them) go through the
// --type recipe like a Hugging Face folder's; names, q/k row order, metadata and tokenizer
// as gguf_hf_source.h.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "formats/export/gguf_source.h"
#include "formats/model_config.h"
#include "formats/packed_checkpoint.h"

namespace fsq {

// The block type a uniform quant type is carried as, if any (Q4_0, Q4_1 or Q8_0).
std::optional<GgmlType> gguf_type_of_grid(const UniformQuant& q);

// Encodes the canonical values of `m` row `hf_row` as llama.cpp blocks of `type` (what
// gguf_type_of_grid gives m.quant) into `dst` (ggml_nbytes(type, m.cols) bytes). Returns
// the number of Q4_1 groups whose m = -z s was rounded, and raises *max_shift (when given)
// to the largest |fp16(m) - (-z s)| among them.
int64_t encode_grid_row(const QuantizedMatrix& m, int64_t hf_row, GgmlType type, std::byte* dst,
                        float* max_shift = nullptr);

class PackedGgufSource : public GgufExportSource {
 public:
  // Opens and validates the folder (PackedCheckpoint::open, sha256 checked). Throws one
  // fsq::Error naming the first linear whose quant type has no llama.cpp block type, and
  // the supported ones.
  explicit PackedGgufSource(const std::filesystem::path& dir);

  const std::string& name() const override { return name_; }
  const GgufMetadata& metadata() const override { return metadata_; }
  const std::vector<GgufSourceTensor>& tensors() const override { return tensors_; }
  void open_tensor(size_t i) const override;
  void release(size_t i) const override;
  void read_rows(size_t i, int64_t first, int64_t count, float* out) const override;
  void copy_blocks(size_t i, std::span<std::byte> out) const override;
  std::vector<std::string> notes() const override;

 private:
  struct Origin {
    const PackedLinear* linear = nullptr;  // a quantized linear or head matrix
    const TensorView* dense = nullptr;     // else a dense tensor
    int64_t permuted_head_dim = 0;
  };
  PackedCheckpoint packed_;
  ModelConfig config_;
  std::string name_;
  GgufMetadata metadata_;
  std::vector<GgufSourceTensor> tensors_;
  std::vector<Origin> origins_;
  std::vector<std::string> notes_;
  mutable QuantizedMatrix open_matrix_;  // the open linear's canonical values
  mutable int64_t rounded_groups_ = 0, q4_1_groups_ = 0;
  mutable float max_shift_ = 0;
};

}  // namespace fsq
