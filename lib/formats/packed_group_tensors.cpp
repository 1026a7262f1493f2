#include "formats/packed_group_tensors.h"

#include <cmath>

#include "common/byte_view.h"
#include "common/error.h"
#include "formats/quant/bitpack.h"

namespace fsq {
namespace {

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
std::vector<const QuantizedLinearToWrite*> quantized_matrices(const PackedGroup& g) {
  std::vector<const QuantizedLinearToWrite*> all;
  for (const QuantizedLinearToWrite& l : g.linears) all.push_back(&l);
  for (const QuantizedLinearToWrite& l : g.head) all.push_back(&l);
  return all;
}

// Packed words of `rows` x `cols` codes, or nothing when not packing.
std::span<const std::byte> packed_words(const std::vector<uint8_t>& codes, int64_t rows, int64_t cols, int bits,
                                        bool pack, GroupTensors& set) {
  if (!pack) return {};
  set.packed.push_back(pack_rows(codes, rows, cols, bits));
  return bytes_of(set.packed.back());
}

// A tensor whose bytes are given.
void add_given(GroupTensors& set, TensorToWrite t) {
  set.nbytes.push_back(t.data.size());
  set.tensors.push_back(std::move(t));
}

// A tensor the writer makes (packed codes, narrowed columns): its size is known before.
void add_made(GroupTensors& set, TensorToWrite t, uint64_t nbytes) {
  set.nbytes.push_back(nbytes);
  set.tensors.push_back(std::move(t));
}

void add_lut_tensors(const std::string& name, const LutMatrix& m, bool pack, GroupTensors& set) {
  const int64_t words = packed_words_per_row(m.bits, m.cols);
  add_made(set, {name + kQWeightSuffix, DType::I32, {m.rows, words}, packed_words(m.codes, m.rows, m.cols, m.bits, pack, set)},
           static_cast<uint64_t>(m.rows * words) * 4);
  add_given(set, {name + kLutSuffix, DType::F16, {m.rows, m.levels()}, bytes_of(m.lut)});
  if (!m.has_sparse()) return;
  add_given(set, {name + kSparseRowPtrSuffix, DType::I32, {m.rows + 1}, bytes_of(m.row_ptr)});
  if (m.cols <= 65536) {  // half the index bytes; FORMAT.md fixes the choice by cols
    std::span<const std::byte> narrow;
    if (pack) {
      set.narrow_cols.emplace_back(m.col.begin(), m.col.end());
      narrow = bytes_of(set.narrow_cols.back());
    }
    add_made(set, {name + kSparseColSuffix, DType::U16, {m.nnz()}, narrow}, static_cast<uint64_t>(m.nnz()) * 2);
  } else {
    add_given(set, {name + kSparseColSuffix, DType::I32, {m.nnz()}, bytes_of(m.col)});
  }
  add_given(set, {name + kSparseValSuffix, DType::F16, {m.nnz()}, bytes_of(m.val)});
}

}  // namespace

std::vector<std::string> quantized_linear_tensor_names(const std::string& base) {
  std::vector<std::string> names;
  for (const char* suffix : {kQWeightSuffix, ".weight", kScalesSuffix, kQZerosSuffix, kLutSuffix,
                             kSparseRowPtrSuffix, kSparseColSuffix, kSparseValSuffix, kInputScaleSuffix})
    names.push_back(base + suffix);
  return names;
}

void check_group(const PackedGroup& g, const std::string& where) {
  for (const QuantizedLinearToWrite& l : g.head)
    if (l.lut || l.act_quant != ActivationQuant::None)
      throw Error(where, "head matrix " + quote_name(l.name) + ": the embedding and head take uniform types only");
  for (const QuantizedLinearToWrite* lp : quantized_matrices(g)) {
    const QuantizedLinearToWrite& l = *lp;
    const std::string what = "linear " + quote_name(l.name);
    if (l.name.empty()) throw Error(where, "a quantized linear has an empty name");
    if (l.lut)
      validate_lut_matrix(*l.lut, where + ": " + what);
    else
      validate_quantized_matrix(l.matrix, where + ": " + what);
    check_activation_quant(l, where + ": " + what);
  }
}

GroupTensors group_tensors(const PackedGroup& g, bool pack) {
  GroupTensors set;
  for (const TensorToWrite& t : g.dense) add_given(set, t);
  for (const QuantizedLinearToWrite* lp : quantized_matrices(g)) {
    const QuantizedLinearToWrite& l = *lp;
    if (l.lut) {
      add_lut_tensors(l.name, *l.lut, pack, set);
      continue;
    }
    const QuantizedMatrix& m = l.matrix;
    const int64_t words = packed_words_per_row(m.quant.bits, m.cols);
    add_made(set, {l.name + kQWeightSuffix, DType::I32, {m.rows, words},
                   packed_words(m.codes, m.rows, m.cols, m.quant.bits, pack, set)},
             static_cast<uint64_t>(m.rows * words) * 4);
    add_given(set, {l.name + kScalesSuffix, DType::F16, {m.rows, m.groups()}, bytes_of(m.scales)});
    if (!m.quant.symmetric) add_given(set, {l.name + kQZerosSuffix, DType::U8, {m.rows, m.groups()}, bytes_of(m.zeros)});
    if (l.act_quant == ActivationQuant::PerTensor)
      add_given(set, {l.name + kInputScaleSuffix, DType::F32, {1}, std::as_bytes(std::span<const float>(&l.input_scale, 1))});
  }
  return set;
}

std::set<std::string> group_quant_types(const PackedGroup& g) {
  std::set<std::string> types;
  for (const QuantizedLinearToWrite* l : quantized_matrices(g)) types.insert(l->quant_type());
  return types;
}

}  // namespace fsq
