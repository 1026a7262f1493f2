// write_packed_checkpoint: validates the input, bit-packs the codes, hashes every tensor,
// and writes the directory into a staging folder that is renamed into place at the end.
#include <bit>
#include <cmath>
#include <deque>
#include <map>
#include <set>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/sha256.h"
#include "formats/packed_checkpoint.h"
#include "formats/quant/bitpack.h"
#include "formats/quant/quant_types.h"
#include "common/byte_view.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

static_assert(std::endian::native == std::endian::little, "tensors are written in host byte order");

// Packed words and the tensor list that points into them (and into the caller's data).
struct TensorSet {
  std::deque<std::vector<uint32_t>> packed;      // one per linear; a deque keeps spans valid
  std::deque<std::vector<uint16_t>> narrow_cols;  // LUT sparse columns stored as U16
  std::vector<TensorToWrite> tensors;
};

void check_activation_quant(const QuantizedLinearToWrite& l, const std::string& where) {
  if (l.act_quant == ActivationQuant::None) return;
  const UniformQuant& q = l.matrix.quant;
  if (l.lut || q.bits != kW8A8Weights.bits || q.group_size != kW8A8Weights.group_size ||
      q.symmetric != kW8A8Weights.symmetric)
    throw Error(where, "a W8A8 linear needs 8-bit per-channel symmetric weights (w8pcs)");
  if (l.act_quant == ActivationQuant::PerTensor && !(std::isfinite(l.input_scale) && l.input_scale > 0))
    throw Error(where, "static activation scale must be finite and > 0, got " + std::to_string(l.input_scale));
}

// The decoder's linears, then the embedding/head matrices: everything written as codes.
std::vector<const QuantizedLinearToWrite*> quantized_matrices(const PackedCheckpointToWrite& c) {
  std::vector<const QuantizedLinearToWrite*> all;
  for (const QuantizedLinearToWrite& l : c.linears) all.push_back(&l);
  for (const QuantizedLinearToWrite& l : c.head) all.push_back(&l);
  return all;
}

void check_input(const PackedCheckpointToWrite& c, const std::string& where) {
  if (!c.source_config.is_object()) throw Error(where, "source config must be a JSON object");
  std::error_code ec;
  if (!c.tokenizer_dir.empty() && !fs::is_directory(c.tokenizer_dir, ec))
    throw Error(c.tokenizer_dir.string(), "tokenizer source folder not found");
  if (c.source_config.contains("quantization_config"))
    throw Error(where, "source config.json already has a quantization_config (an already quantized model)");
  std::set<std::string> reserved;  // names the quantized linears own
  for (const QuantizedLinearToWrite& l : c.head)
    if (l.lut || l.act_quant != ActivationQuant::None)
      throw Error(where, "head matrix " + quote_name(l.name) + ": the embedding and head take uniform types only");
  for (const QuantizedLinearToWrite* lp : quantized_matrices(c)) {
    const QuantizedLinearToWrite& l = *lp;
    const std::string what = "linear " + quote_name(l.name);
    if (l.name.empty()) throw Error(where, "a quantized linear has an empty name");
    if (!reserved.insert(l.name + kQWeightSuffix).second) throw Error(where, what + " is given twice");
    if (l.lut)
      validate_lut_matrix(*l.lut, where + ": " + what);
    else
      validate_quantized_matrix(l.matrix, where + ": " + what);
    check_activation_quant(l, where + ": " + what);
    for (const char* suffix : {".weight", kScalesSuffix, kQZerosSuffix, kLutSuffix, kSparseRowPtrSuffix,
                               kSparseColSuffix, kSparseValSuffix, kInputScaleSuffix})
      reserved.insert(l.name + suffix);
  }
  for (const TensorToWrite& t : c.dense)
    if (reserved.count(t.name))
      throw Error(where, "dense tensor " + quote_name(t.name) + " clashes with a quantized linear");
}

void add_lut_tensors(const std::string& name, const LutMatrix& m, TensorSet& set) {
  set.packed.push_back(pack_rows(m.codes, m.rows, m.cols, m.bits));
  set.tensors.push_back(
      {name + kQWeightSuffix, DType::I32, {m.rows, packed_words_per_row(m.bits, m.cols)}, bytes_of(set.packed.back())});
  set.tensors.push_back({name + kLutSuffix, DType::F16, {m.rows, m.levels()}, bytes_of(m.lut)});
  if (!m.has_sparse()) return;
  set.tensors.push_back({name + kSparseRowPtrSuffix, DType::I32, {m.rows + 1}, bytes_of(m.row_ptr)});
  if (m.cols <= 65536) {  // half the index bytes; FORMAT.md fixes the choice by cols
    set.narrow_cols.emplace_back(m.col.begin(), m.col.end());
    set.tensors.push_back({name + kSparseColSuffix, DType::U16, {m.nnz()}, bytes_of(set.narrow_cols.back())});
  } else {
    set.tensors.push_back({name + kSparseColSuffix, DType::I32, {m.nnz()}, bytes_of(m.col)});
  }
  set.tensors.push_back({name + kSparseValSuffix, DType::F16, {m.nnz()}, bytes_of(m.val)});
}

TensorSet build_tensors(const PackedCheckpointToWrite& c) {
  TensorSet set;
  set.tensors = c.dense;
  for (const QuantizedLinearToWrite* lp : quantized_matrices(c)) {
    const QuantizedLinearToWrite& l = *lp;
    if (l.lut) {
      add_lut_tensors(l.name, *l.lut, set);
      continue;
    }
    const QuantizedMatrix& m = l.matrix;
    const int64_t words = packed_words_per_row(m.quant.bits, m.cols);
    set.packed.push_back(pack_rows(m.codes, m.rows, m.cols, m.quant.bits));
    set.tensors.push_back(
        {l.name + kQWeightSuffix, DType::I32, {m.rows, words}, bytes_of(set.packed.back())});
    set.tensors.push_back({l.name + kScalesSuffix, DType::F16, {m.rows, m.groups()}, bytes_of(m.scales)});
    if (!m.quant.symmetric)
      set.tensors.push_back({l.name + kQZerosSuffix, DType::U8, {m.rows, m.groups()}, bytes_of(m.zeros)});
    if (l.act_quant == ActivationQuant::PerTensor)
      set.tensors.push_back({l.name + kInputScaleSuffix, DType::F32, {1},
                             std::as_bytes(std::span<const float>(&l.input_scale, 1))});
  }
  return set;
}

json manifest_entries(const std::vector<QuantizedLinearToWrite>& list) {
  json entries = json::object();
  for (const QuantizedLinearToWrite& l : list)
    entries[l.name] = {{"quant_type", l.quant_type()},
                       {"shape", {l.lut ? l.lut->rows : l.matrix.rows, l.lut ? l.lut->cols : l.matrix.cols}},
                       {"method", l.method},
                       {"options", l.options}};
  return entries;
}

json build_manifest(const PackedCheckpointToWrite& c, const std::vector<TensorToWrite>& tensors) {
  json linears = manifest_entries(c.linears);
  json hashes = json::object();
  for (const TensorToWrite& t : tensors) hashes[t.name] = sha256_hex(t.data);
  json manifest = {{"format_version", kPackedFormatVersion},
                   {"source_sha256", c.source_sha256},
                   {"calibration", c.calibration},
                   {"linears", std::move(linears)},
                   {"tensor_sha256", std::move(hashes)}};
  // Optional provenance (FORMAT.md): absent rather than null, as version-1 writers before it.
  if (!c.run_options.is_null()) manifest["run_options"] = c.run_options;
  if (!c.head.empty()) manifest[kPackedHeadKey] = manifest_entries(c.head);
  if (!c.producer.is_null()) manifest["producer"] = c.producer;
  return manifest;
}

json build_config(const PackedCheckpointToWrite& c) {
  std::set<std::string> types;
  for (const QuantizedLinearToWrite* l : quantized_matrices(c)) types.insert(l->quant_type());
  json config = c.source_config;
  config["quantization_config"] = {{"quant_method", "fsq"},
                                   {"format_version", kPackedFormatVersion},
                                   {"manifest", kPackedManifestFile},
                                   {"quant_types", types}};
  return config;
}

void copy_source_files(const fs::path& from, const fs::path& to) {
  if (from.empty()) return;
  std::error_code ec;
  for (const std::string& name : packed_copied_source_files())
    if (fs::is_regular_file(from / name, ec)) copy_file_atomic(from / name, to / name);
}

}  // namespace

std::string QuantizedLinearToWrite::quant_type() const {
  if (lut) return lut_quant_name(lut->bits);
  if (act_quant != ActivationQuant::None) return w8a8_quant_name(act_quant);
  return uniform_quant_name(matrix.quant);
}

const std::vector<std::string>& packed_copied_source_files() {
  // clang-format off
  static const std::vector<std::string> names = {
      "tokenizer.json", "tokenizer.model", "tokenizer_config.json", "special_tokens_map.json",
      "added_tokens.json", "vocab.json", "merges.txt", "generation_config.json"};
  // clang-format on
  return names;
}

void write_packed_checkpoint(const PackedCheckpointToWrite& ckpt, const fs::path& out) {
  AtomicDir::check_destination(out);
  check_input(ckpt, out.string());

  const TensorSet set = build_tensors(ckpt);
  const json manifest = build_manifest(ckpt, set.tensors);
  const json config = build_config(ckpt);

  AtomicDir dir(out);  // removes its staging folder on any failure
  const fs::path& staging = dir.staging();
  const std::map<std::string, std::string> meta = {
      {"format", "pt"}, {"fsq_format_version", std::to_string(kPackedFormatVersion)}};
  write_safetensors(staging / kPackedWeightsFile, set.tensors, meta);
  write_file_atomic(staging / kPackedConfigFile, config.dump(2) + "\n");
  copy_source_files(ckpt.tokenizer_dir, staging);
  // fsq.json last: a staging folder with it is complete.
  write_file_atomic(staging / kPackedManifestFile, manifest.dump(2) + "\n");
  dir.commit();
}

}  // namespace fsq
