// fsq export --format gguf: a model (a llama.cpp GGUF of any type fsq dequantizes, a Hugging
// Face folder, or fsq's packed checkpoint: gguf_source.h) written in llama.cpp's block types
// with fsq's importance-weighted block search (gguf/quantize_blocks.h). Metadata and
// tokenizer come from the source; which tensor gets which type follows llama-quantize's
// rules (gguf_recipe.h), so the file is the size llama-quantize's is and a comparison
// measures the block choices alone. Tensors stream: one is read, converted and written
// before the next is touched.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/export/gguf_recipe.h"
#include "formats/export/gguf_source.h"
#include "formats/gguf/ggml_types.h"

namespace fsq {

class GgufFile;

struct GgufTensorPlan {
  std::string name;
  GgmlType from = GgmlType::F32;
  GgmlType to = GgmlType::F32;
  std::vector<int64_t> dims;  // ggml order
  std::string note;           // why `to` differs from the recipe's base type ("" when it does not)
  bool weighted = false;      // importance weights were found for it (set by export_gguf)
  bool carried = false;       // the source's own blocks, copied (GgufSourceTensor::carried)
};

struct GgufExportPlan {
  GgufRecipe recipe = GgufRecipe::Q4_0;
  std::vector<int> layer_bits;          // from fsq plan; empty: the recipe decides every layer
  std::vector<GgufTensorPlan> tensors;  // source order
};

// Decides each tensor's type: 1-D tensors stay F32, carried tensors keep their blocks,
// matrices follow the recipe (gguf_recipe.h) with `has_importance` and `pure` as
// llama-quantize's imatrix and --pure.
// Throws fsq::Error (before anything is written) when a source tensor cannot be read or the
// recipe's base type divides no matrix's rows into whole blocks.
// With `layer_bits` (one width per decoder layer, fsq plan's bits_per_layer), every matrix of
// layer i gets gguf_type_for_bits(layer_bits[i]) (with shape fallbacks), and the recipe decides
// only the tensors outside the layers (embeddings, head); a plan of another layer count or a
// width GGUF cannot hold is refused.
GgufExportPlan plan_gguf_export(const GgufExportSource& source, GgufRecipe recipe, bool has_importance,
                                bool pure = false, const std::vector<int>& layer_bits = {});
GgufExportPlan plan_gguf_export(const GgufFile& source, GgufRecipe recipe, bool has_importance, bool pure = false,
                                const std::vector<int>& layer_bits = {});

// How blocks of the legacy types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) are filled: Search fits each
// block's scale (quantize_blocks.h); Nearest rounds once from the block's extremes, as
// llama-quantize does without an importance matrix (quantize_nearest.h). Other types always
// search.
enum class GgufRounding { Search, Nearest };

struct GgufExportOptions {
  // Per-input-column importance (E[x^2] over calibration tokens) of the matrix with this
  // GGUF name and row length; empty when there is none (then the search weights each element
  // by sqrt(sigma^2 + w^2), a proxy favouring large weights).
  std::function<std::vector<float>(const std::string& gguf_name, int64_t cols)> importance;
  int threads = 1;
  GgufRounding rounding = GgufRounding::Search;  // Nearest takes no importance weights
  std::function<void(size_t done, size_t total)> progress;  // tensors written
  // Activation-aware scaling (gguf_awq.h): matrices whose columns are multiplied by s before
  // blocking (their importance divided by s^2), and 1-D norm weights divided by s.
  std::map<std::string, std::vector<float>> column_scale;
  std::map<std::string, std::vector<float>> norm_divisor;
  nlohmann::json provenance;  // stored as the string key fsq.export (JSON)
  // Keys set after the source's metadata (general.file_type, general.quantization_version
  // and fsq.export are set by the export itself).
  GgufMetadata extra_metadata;
};

struct GgufExportReport {
  GgufExportPlan plan;
  uint64_t file_bytes = 0;
  int64_t parameters = 0;         // elements of every tensor
  double bits_per_weight = 0;     // 8 * tensor data bytes / parameters
  nlohmann::json to_json() const;
};

// Writes `out` atomically (temp file, fsync, rename), one tensor at a time: the source's
// tensor is opened, converted row by row into the output buffer, written and released.
GgufExportReport export_gguf(const GgufExportSource& source, const GgufExportPlan& plan,
                             const std::filesystem::path& out, const GgufExportOptions& options);
GgufExportReport export_gguf(const GgufFile& source, const GgufExportPlan& plan, const std::filesystem::path& out,
                             const GgufExportOptions& options);

}  // namespace fsq
