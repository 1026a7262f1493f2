// The packed checkpoint directory that `fsq quantize` writes and `fsq eval` reads:
// config.json (+ quantization_config), model.safetensors or shards with their index
// (bit-packed codes, fp16 scales, uint8 zero points, dense tensors as given), fsq.json (quant type per linear, provenance,
// per-tensor sha256) and the source's tokenizer files. FORMAT.md is the specification.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "formats/quant/lut_quant.h"
#include "formats/quant/uniform_reference.h"
#include "formats/quant/w8a8_quant.h"
#include "formats/safetensors.h"
#include "formats/safetensors_shards.h"
#include "formats/shard_plan.h"

namespace fsq {

// The fsq.json format_version this build writes and the only one it reads.
inline constexpr int kPackedFormatVersion = 1;

inline constexpr const char* kPackedManifestFile = "fsq.json";
inline constexpr const char* kPackedConfigFile = "config.json";
inline constexpr const char* kPackedWeightsFile = kSingleWeightsFile;  // when one shard holds all
// fsq.json's object of quantized embedding/head matrices (same entries as "linears").
inline constexpr const char* kPackedHeadKey = "embedding_and_head";
// Suffixes appended to a quantized linear's base name ("model.layers.0.self_attn.q_proj").
inline constexpr const char* kQWeightSuffix = ".qweight";  // I32 [rows, words per row]
inline constexpr const char* kScalesSuffix = ".scales";    // F16 [rows, groups]
inline constexpr const char* kQZerosSuffix = ".qzeros";    // U8 [rows, groups], asym only
inline constexpr const char* kBiasSuffix = ".bias";        // stored as given, dense
// LUT types ("lut3", "lut4"; quant/lut_quant.h): codes in .qweight as above, plus
inline constexpr const char* kLutSuffix = ".lut";                       // F16 [rows, 2^bits]
inline constexpr const char* kSparseRowPtrSuffix = ".sparse_row_ptr";  // I32 [rows + 1], optional
inline constexpr const char* kSparseColSuffix = ".sparse_col";         // U16 (cols <= 65536) or I32 [nnz]
inline constexpr const char* kSparseValSuffix = ".sparse_val";         // F16 [nnz]
// W8A8 types ("w8a8", "w8a8static"; quant/w8a8_quant.h): .qweight and .scales as w8pcs, plus
inline constexpr const char* kInputScaleSuffix = ".input_scale";  // F32 [1], w8a8static only
// Integer-only checkpoints (--method intonly): per decoder layer, "<layer prefix>" +
// kIntonlyRangesSuffix ("model.layers.3.intonly_absmax"), F32 [kIntonlyRangeCount]: the
// calibrated largest |value| of the activations the integer path requantizes to, in the order
// of IntonlyRange (FORMAT.md). Every value finite and > 0.
inline constexpr const char* kIntonlyRangesSuffix = ".intonly_absmax";
enum IntonlyRange : int {
  kRangeResidualIn = 0,  // the residual stream entering the layer
  kRangeQ,               // q_proj output after RoPE
  kRangeK,               // k_proj output after RoPE
  kRangeV,               // v_proj output
  kRangeResidualMid,     // the residual stream after the attention block's add
  kRangeGate,            // gate_proj output (the SiLU input)
  kRangeUp,              // up_proj output
  kRangeResidualOut,     // the residual stream leaving the layer
  kIntonlyRangeCount
};

// One quantized linear to write. The quant type, rows and cols come from `matrix`, or from
// `lut` when that is set (a LUT type; `matrix` is then ignored). With `act_quant` set,
// `matrix` must be kW8A8Weights and the type is "w8a8" / "w8a8static" (input_scale: the
// static activation scale, finite and > 0, PerTensor only).
struct QuantizedLinearToWrite {
  std::string name;        // base name, without ".weight"
  QuantizedMatrix matrix;  // canonical codes/scales/zeros (validated, then bit-packed)
  std::string method;      // the pass that produced it: "rtn", "awq", ...
  nlohmann::json options = nlohmann::json::object();  // the pass's options, stored verbatim
  std::optional<LutMatrix> lut;
  ActivationQuant act_quant = ActivationQuant::None;
  float input_scale = 0.0f;

  std::string quant_type() const;  // registry name: "w4g128a", "lut4", ...
};

// Everything of a packed folder besides its tensors.
struct PackedCheckpointMeta {
  nlohmann::json source_config;         // the source config.json (an object)
  nlohmann::json calibration;           // provenance, opaque; null when none
  nlohmann::json run_options;           // every byte-changing option of the run, opaque; null: omitted
  nlohmann::json producer;              // {"name", "version", "commit"} of the writer; null: omitted
  std::string source_sha256;            // identity of the source weights
  std::filesystem::path tokenizer_dir;  // copy tokenizer files from here; empty: none
};

// Tensors that are made together: a decoder layer, or one tensor of the source.
struct PackedGroup {
  std::vector<TensorToWrite> dense;  // embeddings, norms, biases, lm_head, ...
  std::vector<QuantizedLinearToWrite> linears;
  // The token embedding and the output head when quantized (fsq quantize --head-bits),
  // uniform types only, named like linears ("model.embed_tokens", "lm_head"); fsq.json
  // lists them under kPackedHeadKey, apart from the decoder's linears.
  std::vector<QuantizedLinearToWrite> head;
  std::vector<std::shared_ptr<const void>> storage;  // owns what `dense` points to, if anything
};

// Makes one group. The streaming writer calls it twice, once to learn the tensors' names
// and sizes and once to write them, and it must make the same tensors both times.
using PackedGroupMaker = std::function<PackedGroup()>;

// The whole checkpoint as one group (tests, small models).
struct PackedCheckpointToWrite : PackedCheckpointMeta {
  std::vector<TensorToWrite> dense;
  std::vector<QuantizedLinearToWrite> linears;
  std::vector<QuantizedLinearToWrite> head;  // as PackedGroup::head
};

struct PackedWriteOptions {
  uint64_t max_shard_bytes = kDefaultMaxShardBytes;  // shard_plan.h
};

// Source files copied verbatim from tokenizer_dir when present.
const std::vector<std::string>& packed_copied_source_files();

// Writes the whole directory at `out`, atomically: everything goes to a sibling
// "<out>.tmp-<pid>" folder (each file fsynced, fsq.json last), which is then renamed to
// `out`. The tensors are streamed: a first pass over the groups learns every tensor's name
// and size and plans the shards (shard_plan.h); the second writes them in name order,
// making each group when its first tensor is due and dropping it before making the next,
// so at most one group is in memory at a time (a group whose tensors are not contiguous in
// name order is made once per run of names). Throws fsq::Error (and leaves nothing behind)
// when `out` exists and is not an empty folder, on invalid input (a bad matrix, a name
// clash, a non-object config) or on a write failure, naming the file.
void write_packed_checkpoint(const PackedCheckpointMeta& meta, const std::vector<PackedGroupMaker>& groups,
                             const std::filesystem::path& out, const PackedWriteOptions& opts = {});
// The same for a checkpoint already in memory.
void write_packed_checkpoint(const PackedCheckpointToWrite& ckpt, const std::filesystem::path& out,
                             const PackedWriteOptions& opts = {});

// A quantized linear of an opened checkpoint. The views point into the mapped
// safetensors files and live as long as the PackedCheckpoint they came from.
struct PackedLinear {
  std::string name;        // base name
  std::string quant_type;  // registry name, e.g. "w4g128a" or "lut4"
  UniformQuant quant;      // uniform types; for LUT types only quant.bits is meaningful
  int lut_bits = 0;        // 3 or 4 for a LUT type, 0 for a uniform one
  int64_t rows = 0;  // out_features
  int64_t cols = 0;  // in_features
  std::string method;
  nlohmann::json options;
  const TensorView* qweight = nullptr;
  const TensorView* scales = nullptr;
  const TensorView* qzeros = nullptr;  // null when symmetric
  const TensorView* bias = nullptr;    // null when absent
  // LUT types: the centroids and the optional CSR part (all three null without one).
  const TensorView* lut = nullptr;
  const TensorView* sparse_row_ptr = nullptr;
  const TensorView* sparse_col = nullptr;
  const TensorView* sparse_val = nullptr;
  // W8A8 types: how activations are quantized, and the static scale (w8a8static only).
  ActivationQuant act_quant = ActivationQuant::None;
  const TensorView* input_scale = nullptr;

  bool is_lut() const { return lut_bits != 0; }
  bool is_w8a8() const { return act_quant != ActivationQuant::None; }
};

struct PackedOpenOptions {
  // Recompute every tensor's sha256 and compare with fsq.json (reads the whole file once).
  bool verify_sha256 = true;
};

class PackedCheckpoint {
 public:
  // Opens and validates the directory; throws one fsq::Error naming the file at fault and
  // the problem (missing file, unknown format version or quant type, missing tensor, wrong
  // dtype or shape, zero point out of range, sha256 mismatch, ...).
  static PackedCheckpoint open(const std::filesystem::path& dir, const PackedOpenOptions& opts = {});

  const std::filesystem::path& dir() const { return dir_; }
  const nlohmann::json& config() const { return config_; }               // config.json
  const nlohmann::json& manifest() const { return manifest_; }           // fsq.json
  const std::vector<PackedLinear>& linears() const { return linears_; }  // sorted by name
  const PackedLinear* find_linear(const std::string& name) const;        // nullptr if absent
  // The quantized token embedding / output head (uniform types), sorted by name; empty when
  // they are stored dense.
  const std::vector<PackedLinear>& head_matrices() const { return head_; }
  const PackedLinear* find_head_matrix(const std::string& name) const;  // nullptr if absent
  // Names of the tensors the quantized linears and head matrices own (qweight, scales,
  // qzeros, bias), and the integer-only ranges.
  std::set<std::string> linear_tensor_names() const;
  // The validated kIntonlyRangesSuffix tensor named `name` (F32 [kIntonlyRangeCount]), or
  // nullptr when the checkpoint has none of that name.
  const TensorView* intonly_ranges(const std::string& name) const;
  bool has_intonly_ranges() const { return !intonly_.empty(); }
  // Tensors that are not a quantized linear's qweight/scales/qzeros (biases included).
  const std::vector<const TensorView*>& dense_tensors() const { return dense_; }
  // model.safetensors, or the shards of model.safetensors.index.json.
  const SafetensorsShards& weights() const { return *weights_; }

 private:
  std::filesystem::path dir_;
  nlohmann::json config_;
  nlohmann::json manifest_;
  std::shared_ptr<const SafetensorsShards> weights_;
  std::vector<PackedLinear> linears_;
  std::vector<PackedLinear> head_;
  std::vector<const TensorView*> dense_;
  std::vector<const TensorView*> intonly_;  // kIntonlyRangesSuffix tensors, sorted by name
};

// Unpacks and dequantizes with the scalar reference: row-major [rows, cols] floats.
std::vector<float> dequantize_linear(const PackedLinear& linear);

// The canonical values of a packed uniform linear (codes unpacked, scales/zeros copied).
// Throws fsq::Error for a LUT linear.
QuantizedMatrix unpack_linear(const PackedLinear& linear);
// The same for a LUT linear; throws fsq::Error for a uniform one.
LutMatrix unpack_lut_linear(const PackedLinear& linear);

}  // namespace fsq
