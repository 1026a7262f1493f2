// PackedCheckpoint::open: the packed directory is untrusted input. fsq.json and
// config.json are checked field by field, every quantized linear's tensors against its
// quant type and shape, and every tensor against its recorded sha256, so a damaged or
// foreign directory fails with one line naming the file instead of producing garbage.
#include "formats/packed_checkpoint.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <set>

#include "common/error.h"
#include "common/half.h"
#include "common/json_file.h"
#include "common/sha256.h"
#include "formats/quant/bitpack.h"
#include "formats/quant/quant_types.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

static_assert(std::endian::native == std::endian::little, "tensors are read in host byte order");

// Rows/cols above this are rejected before any size arithmetic (no overflow possible).
constexpr int64_t kMaxDim = int64_t{1} << 40;

// "what: " before a message about a nested object; nothing for the file's top level.
std::string prefix(const std::string& what) { return what.empty() ? "" : what + ": "; }

const json& member(const json& obj, const std::string& key, const std::string& where,
                   const std::string& what) {
  auto it = obj.find(key);
  if (it == obj.end()) throw Error(where, prefix(what) + "missing \"" + key + "\"");
  return *it;
}

std::string string_member(const json& obj, const std::string& key, const std::string& where,
                          const std::string& what) {
  const json& v = member(obj, key, where, what);
  if (!v.is_string()) throw Error(where, prefix(what) + "\"" + key + "\" must be a string");
  return v.get<std::string>();
}

// format_version must be an integer this build reads.
void check_version(const json& v, const std::string& where, const std::string& what) {
  if (!v.is_number_integer()) throw Error(where, prefix(what) + "\"format_version\" must be an integer");
  if (v.get<int64_t>() != kPackedFormatVersion)
    throw Error(where, prefix(what) + "unknown format_version " + v.dump() + " (this build reads " +
                           std::to_string(kPackedFormatVersion) + ")");
}

void check_manifest(const json& m, const std::string& where) {
  if (!m.is_object()) throw Error(where, "must be a JSON object");
  check_version(member(m, "format_version", where, ""), where, "");
  string_member(m, "source_sha256", where, "");
  member(m, "calibration", where, "");
  if (!member(m, "linears", where, "").is_object()) throw Error(where, "\"linears\" must be an object");
  if (m.contains(kPackedHeadKey) && !m[kPackedHeadKey].is_object())
    throw Error(where, std::string("\"") + kPackedHeadKey + "\" must be an object");
  const json& hashes = member(m, "tensor_sha256", where, "");
  if (!hashes.is_object()) throw Error(where, "\"tensor_sha256\" must be an object");
  for (const auto& [name, h] : hashes.items())
    if (!h.is_string()) throw Error(where, "tensor_sha256 of " + quote_name(name) + " must be a string");
}

void check_config(const json& c, const std::string& where) {
  if (!c.is_object()) throw Error(where, "must be a JSON object");
  const json& q = member(c, "quantization_config", where, "");
  if (!q.is_object()) throw Error(where, "\"quantization_config\" must be an object");
  const std::string method = string_member(q, "quant_method", where, "quantization_config");
  if (method != "fsq")
    throw Error(where, "quantization_config quant_method is " + quote_name(method) + ", not 'fsq'");
  check_version(member(q, "format_version", where, "quantization_config"), where, "quantization_config");
}

int64_t positive_dim(const json& v, const std::string& where, const std::string& what) {
  if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > kMaxDim)
    throw Error(where, what + ": shape must hold two positive integers");
  return v.get<int64_t>();
}

// The linear's tensor `suffix`, which must exist with `dtype` and `shape`.
const TensorView* expect_tensor(const SafetensorsShards& file, const PackedLinear& l, const char* suffix,
                                DType dtype, const std::vector<int64_t>& shape) {
  const std::string name = l.name + suffix;
  const std::string where = file.file_of(name).string();
  const TensorView* t = file.find(name);
  if (!t)
    throw Error(where, "tensor " + quote_name(name) + " is missing (fsq.json lists linear " +
                           quote_name(l.name) + ")");
  if (t->dtype != dtype)
    throw Error(where, "tensor " + quote_name(name) + " has the wrong dtype", std::string(dtype_name(dtype)),
                std::string(dtype_name(t->dtype)));
  if (t->shape != shape)
    throw Error(where,
                "tensor " + quote_name(name) + " shape does not match " + l.quant_type + " for [" +
                    std::to_string(l.rows) + ", " + std::to_string(l.cols) + "]",
                shape_text(shape), shape_text(t->shape));
  return t;
}

// Values a kernel would trust: finite scales, zero points within the code range.
void check_values(const PackedLinear& l, const std::string& where) {
  const size_t n = static_cast<size_t>(l.scales->numel());
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, l.scales->data + 2 * i, sizeof h);
    if (!std::isfinite(f16_to_f32(h)))
      throw Error(where,
                  "tensor " + quote_name(l.scales->name) + ": scale " + std::to_string(i) + " is not finite");
  }
  if (!l.qzeros) return;
  const auto max_zero = static_cast<uint8_t>((1 << l.quant.bits) - 1);
  for (size_t i = 0; i < n; ++i)
    if (static_cast<uint8_t>(l.qzeros->data[i]) > max_zero)
      throw Error(where, "tensor " + quote_name(l.qzeros->name) + ": zero point " + std::to_string(i) +
                             " is " + std::to_string(static_cast<int>(l.qzeros->data[i])) + ", above " +
                             std::to_string(max_zero) + " for " + l.quant_type);
}

// What the int8 kernels trust (runtime/cpu/int8_kernels.h): weight codes in [-127, 127],
// i.e. no stored byte 0 (which stands for -128), and a finite positive static scale.
void check_w8a8_values(const PackedLinear& l, const std::string& where) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(l.qweight->data);
  const int64_t row_bytes = packed_words_per_row(8, l.cols) * 4;
  for (int64_t r = 0; r < l.rows; ++r)
    for (int64_t c = 0; c < l.cols; ++c)
      if (bytes[r * row_bytes + c] == 0)
        throw Error(where, "tensor " + quote_name(l.qweight->name) + ": code -128 at [" + std::to_string(r) + ", " +
                               std::to_string(c) + "]; " + l.quant_type + " codes are -127 .. 127");
  if (!l.input_scale) return;
  float s;
  std::memcpy(&s, l.input_scale->data, sizeof s);
  if (!(std::isfinite(s) && s > 0))
    throw Error(where, "tensor " + quote_name(l.input_scale->name) + ": static activation scale " + std::to_string(s) +
                           " is not finite and > 0");
}

// The values a LUT kernel would trust: finite centroids, and a CSR part whose row pointers
// start at 0, never decrease and end at nnz, with columns strictly increasing and < cols
// within each row and finite values. Checked on the mapped bytes: nothing is unpacked.
void check_lut_values(const PackedLinear& l, const std::string& where) {
  auto f16_at = [](const TensorView& t, int64_t i) {
    uint16_t h;
    std::memcpy(&h, t.data + 2 * i, sizeof h);
    return f16_to_f32(h);
  };
  for (int64_t i = 0; i < l.lut->numel(); ++i)
    if (!std::isfinite(f16_at(*l.lut, i)))
      throw Error(where, "tensor " + quote_name(l.lut->name) + ": centroid " + std::to_string(i) + " is not finite");
  if (!l.sparse_row_ptr) return;
  auto i32_at = [](const TensorView& t, int64_t i) {
    int32_t v;
    std::memcpy(&v, t.data + 4 * i, sizeof v);
    return v;
  };
  auto col_at = [&](int64_t i) -> int64_t {
    if (l.sparse_col->dtype == DType::I32) return i32_at(*l.sparse_col, i);
    uint16_t v;
    std::memcpy(&v, l.sparse_col->data + 2 * i, sizeof v);
    return v;
  };
  const std::string rp = quote_name(l.sparse_row_ptr->name);
  const int64_t nnz = l.sparse_val->numel();
  if (i32_at(*l.sparse_row_ptr, 0) != 0) throw Error(where, "tensor " + rp + " does not start at 0");
  if (i32_at(*l.sparse_row_ptr, l.rows) != nnz)
    throw Error(where, "tensor " + rp + " ends at " + std::to_string(i32_at(*l.sparse_row_ptr, l.rows)) + " but " +
                           quote_name(l.sparse_val->name) + " holds " + std::to_string(nnz) + " values");
  for (int64_t r = 0; r < l.rows; ++r) {
    const int64_t begin = i32_at(*l.sparse_row_ptr, r), end = i32_at(*l.sparse_row_ptr, r + 1);
    if (end < begin || end > nnz) throw Error(where, "tensor " + rp + " decreases or overruns at row " + std::to_string(r));
    for (int64_t i = begin; i < end; ++i) {
      const int64_t c = col_at(i);
      if (c < 0 || c >= l.cols)
        throw Error(where, "tensor " + quote_name(l.sparse_col->name) + ": column " + std::to_string(c) + " of row " +
                               std::to_string(r) + " is outside 0.." + std::to_string(l.cols - 1));
      if (i > begin && c <= col_at(i - 1))
        throw Error(where, "tensor " + quote_name(l.sparse_col->name) + ": columns of row " + std::to_string(r) +
                               " are not strictly increasing");
    }
  }
  for (int64_t i = 0; i < nnz; ++i)
    if (!std::isfinite(f16_at(*l.sparse_val, i)))
      throw Error(where, "tensor " + quote_name(l.sparse_val->name) + ": value " + std::to_string(i) + " is not finite");
}

// The LUT tensors of `l` (its qweight is read by the caller): centroids, and the CSR part,
// which is all there or all absent.
void read_lut_tensors(PackedLinear& l, const SafetensorsShards& file) {
  const std::string where = file.file_of(l.name + kQWeightSuffix).string();
  l.lut = expect_tensor(file, l, kLutSuffix, DType::F16, {l.rows, int64_t{1} << l.lut_bits});
  const TensorView* row_ptr = file.find(l.name + kSparseRowPtrSuffix);
  const TensorView* col = file.find(l.name + kSparseColSuffix);
  const TensorView* val = file.find(l.name + kSparseValSuffix);
  if (!row_ptr && !col && !val) return;
  if (!row_ptr || !col || !val)
    throw Error(where, "linear " + quote_name(l.name) + " has an incomplete sparse part (needs " + kSparseRowPtrSuffix +
                           ", " + kSparseColSuffix + " and " + kSparseValSuffix + ")");
  l.sparse_row_ptr = expect_tensor(file, l, kSparseRowPtrSuffix, DType::I32, {l.rows + 1});
  if (val->shape.size() != 1) throw Error(where, "tensor " + quote_name(val->name) + " must be one-dimensional");
  const int64_t nnz = val->shape[0];
  l.sparse_val = expect_tensor(file, l, kSparseValSuffix, DType::F16, {nnz});
  l.sparse_col = expect_tensor(file, l, kSparseColSuffix, l.cols <= 65536 ? DType::U16 : DType::I32, {nnz});
}

PackedLinear read_linear(const std::string& name, const json& entry, const SafetensorsShards& file,
                         const std::string& manifest_where) {
  const std::string what = "linear " + quote_name(name);
  if (!entry.is_object()) throw Error(manifest_where, what + " must be an object");
  PackedLinear l;
  l.name = name;
  l.quant_type = string_member(entry, "quant_type", manifest_where, what);
  l.lut_bits = lut_bits_of(l.quant_type);
  l.act_quant = w8a8_mode_of(l.quant_type);
  if (l.is_w8a8()) {
    l.quant = kW8A8Weights;
  } else if (l.lut_bits == 0) {
    l.quant = find_uniform_quant(l.quant_type, manifest_where + ": " + what);
  } else {
    l.quant.bits = l.lut_bits;
  }
  const json& shape = member(entry, "shape", manifest_where, what);
  if (!shape.is_array() || shape.size() != 2)
    throw Error(manifest_where, what + ": shape must hold two positive integers");
  l.rows = positive_dim(shape[0], manifest_where, what);
  l.cols = positive_dim(shape[1], manifest_where, what);
  if (!l.is_lut() && l.cols % l.quant.group_cols(l.cols) != 0)
    throw Error(manifest_where, what + ": " + std::to_string(l.cols) +
                                    " columns are not a multiple of the group size of " + l.quant_type);
  l.method = string_member(entry, "method", manifest_where, what);
  l.options = member(entry, "options", manifest_where, what);

  const std::string where = file.file_of(name + kQWeightSuffix).string();
  l.qweight = expect_tensor(file, l, kQWeightSuffix, DType::I32,
                            {l.rows, packed_words_per_row(l.quant.bits, l.cols)});
  std::vector<const char*> foreign = l.is_lut() ? std::vector<const char*>{kScalesSuffix, kQZerosSuffix}
                                                : std::vector<const char*>{kLutSuffix, kSparseRowPtrSuffix,
                                                                           kSparseColSuffix, kSparseValSuffix};
  if (l.act_quant != ActivationQuant::PerTensor) foreign.push_back(kInputScaleSuffix);
  for (const char* suffix : foreign)
    if (file.find(name + suffix))
      throw Error(where, "tensor " + quote_name(name + suffix) + " does not belong to a " + l.quant_type + " linear");
  if (l.is_lut()) {
    read_lut_tensors(l, file);
  } else {
    const int64_t groups = l.quant.group_count(l.cols);
    l.scales = expect_tensor(file, l, kScalesSuffix, DType::F16, {l.rows, groups});
    if (!l.quant.symmetric) {
      l.qzeros = expect_tensor(file, l, kQZerosSuffix, DType::U8, {l.rows, groups});
    } else if (file.find(name + kQZerosSuffix)) {
      throw Error(where, "tensor " + quote_name(name + kQZerosSuffix) + " is present but " + l.quant_type +
                             " is symmetric");
    }
  }
  if (file.find(name + ".weight"))
    throw Error(where, "tensor " + quote_name(name + ".weight") + " is present next to quantized linear " +
                           quote_name(name));
  if (l.act_quant == ActivationQuant::PerTensor)
    l.input_scale = expect_tensor(file, l, kInputScaleSuffix, DType::F32, {1});
  l.bias = file.find(name + kBiasSuffix);
  if (l.is_lut())
    check_lut_values(l, where);
  else
    check_values(l, where);
  if (l.is_w8a8()) check_w8a8_values(l, where);
  return l;
}

// An integer-only range tensor: F32 [kIntonlyRangeCount], every value finite and > 0 (the
// runtime divides by them to get its static scales).
void check_intonly_ranges(const TensorView& t, const std::string& where) {
  if (t.dtype != DType::F32 || t.shape != std::vector<int64_t>{kIntonlyRangeCount})
    throw Error(where, "tensor " + quote_name(t.name) + " must be F32 [" + std::to_string(kIntonlyRangeCount) +
                           "] (integer-only activation ranges), got " + std::string(dtype_name(t.dtype)) + " " +
                           shape_text(t.shape));
  for (int i = 0; i < kIntonlyRangeCount; ++i) {
    float v;
    std::memcpy(&v, t.data + 4 * i, sizeof v);
    if (!(std::isfinite(v) && v > 0))
      throw Error(where, "tensor " + quote_name(t.name) + ": range " + std::to_string(i) + " is " +
                             std::to_string(v) + "; integer-only ranges must be finite and > 0");
  }
}

// Every tensor in the file is listed in fsq.json and vice versa; with `verify`, each
// tensor's bytes hash to the recorded sha256.
void check_tensor_hashes(const SafetensorsShards& file, const json& hashes, const std::string& manifest_where,
                         bool verify) {
  for (const TensorView* t : file.tensors())
    if (!hashes.contains(t->name))
      throw Error(manifest_where, "tensor " + quote_name(t->name) + " of " +
                                      file.file_of(t->name).filename().string() + " is not in tensor_sha256");
  for (const auto& [name, expected] : hashes.items()) {
    const std::string where = file.file_of(name).string();
    const TensorView* t = file.find(name);
    if (!t) throw Error(where, "tensor " + quote_name(name) + " listed in fsq.json is missing");
    if (!verify) continue;
    const std::string got = sha256_hex(std::span<const std::byte>(t->data, t->nbytes));
    if (got != expected.get<std::string>())
      throw Error(where, "tensor " + quote_name(name) + " sha256 does not match fsq.json (corrupted file)",
                  expected.get<std::string>(), got);
  }
}

}  // namespace

PackedCheckpoint PackedCheckpoint::open(const fs::path& dir, const PackedOpenOptions& opts) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(dir.string(), fs::exists(dir, ec) ? "not a folder" : "folder not found");
  PackedCheckpoint c;
  c.dir_ = dir;
  const std::string manifest_where = (dir / kPackedManifestFile).string();
  c.manifest_ = read_json_file(dir / kPackedManifestFile);
  check_manifest(c.manifest_, manifest_where);
  c.config_ = read_json_file(dir / kPackedConfigFile);
  check_config(c.config_, (dir / kPackedConfigFile).string());
  if (!fs::exists(dir / kSingleWeightsFile, ec) && !fs::exists(dir / kWeightsIndexFile, ec))
    throw Error((dir / kSingleWeightsFile).string(),
                std::string("cannot open: no such file, nor a sharded set's ") + kWeightsIndexFile);
  c.weights_ = std::make_shared<const SafetensorsShards>(SafetensorsShards::open(dir));

  std::set<std::string> quantized_tensors;
  const auto reserve = [&](const std::string& name) {
    for (const char* suffix : {kQWeightSuffix, kScalesSuffix, kQZerosSuffix, kLutSuffix, kSparseRowPtrSuffix,
                               kSparseColSuffix, kSparseValSuffix, kInputScaleSuffix})
      if (!quantized_tensors.insert(name + suffix).second)
        throw Error(manifest_where, quote_name(name) + " is listed twice");
  };
  for (const auto& [name, entry] : c.manifest_["linears"].items()) {
    c.linears_.push_back(read_linear(name, entry, *c.weights_, manifest_where));
    reserve(name);
  }
  if (c.manifest_.contains(kPackedHeadKey))
    for (const auto& [name, entry] : c.manifest_[kPackedHeadKey].items()) {
      PackedLinear m = read_linear(name, entry, *c.weights_, manifest_where);
      if (m.is_lut() || m.is_w8a8())
        throw Error(manifest_where, std::string(kPackedHeadKey) + " entry " + quote_name(name) + " has type " +
                                        quote_name(m.quant_type) + "; the embedding and head take uniform types only");
      reserve(name);
      c.head_.push_back(std::move(m));
    }
  check_tensor_hashes(*c.weights_, c.manifest_["tensor_sha256"], manifest_where, opts.verify_sha256);
  c.weights_->drop_resident_pages();  // hashing read every page; the loader reads them again once
  const std::string qweight_suffix = kQWeightSuffix;
  for (const TensorView* t : c.weights_->tensors()) {
    if (quantized_tensors.count(t->name)) continue;
    if (t->name.ends_with(kIntonlyRangesSuffix)) {
      check_intonly_ranges(*t, c.weights_->file_of(t->name).string());
      c.intonly_.push_back(t);
      continue;
    }
    if (t->name.ends_with(qweight_suffix))  // packed codes nobody describes: unusable
      throw Error(manifest_where, "tensor " + quote_name(t->name) + " has no entry in \"linears\"");
    c.dense_.push_back(t);
  }
  return c;
}

std::set<std::string> PackedCheckpoint::linear_tensor_names() const {
  std::set<std::string> names;
  const auto add = [&](const PackedLinear& l) {
    for (const TensorView* t : {l.qweight, l.scales, l.qzeros, l.bias, l.lut, l.sparse_row_ptr, l.sparse_col,
                                l.sparse_val, l.input_scale})
      if (t != nullptr) names.insert(t->name);
  };
  for (const PackedLinear& l : linears_) add(l);
  for (const PackedLinear& l : head_) add(l);
  for (const TensorView* t : intonly_) names.insert(t->name);
  return names;
}

const TensorView* PackedCheckpoint::intonly_ranges(const std::string& name) const {
  for (const TensorView* t : intonly_)
    if (t->name == name) return t;
  return nullptr;
}

const PackedLinear* PackedCheckpoint::find_head_matrix(const std::string& name) const {
  for (const PackedLinear& m : head_)
    if (m.name == name) return &m;
  return nullptr;
}

const PackedLinear* PackedCheckpoint::find_linear(const std::string& name) const {
  auto it = std::lower_bound(linears_.begin(), linears_.end(), name,
                             [](const PackedLinear& l, const std::string& n) { return l.name < n; });
  return it != linears_.end() && it->name == name ? &*it : nullptr;
}

namespace {

// Copies instead of casts: a foreign writer need not align tensors. An empty tensor (a
// sparse part with nnz = 0) copies nothing: memcpy from/to a null pointer is undefined even
// for 0 bytes, and an empty vector's data() may be null.
template <typename T>
std::vector<T> copy_values(const TensorView& t) {
  std::vector<T> out(t.nbytes / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), t.data, out.size() * sizeof(T));
  return out;
}

}  // namespace

QuantizedMatrix unpack_linear(const PackedLinear& l) {
  if (l.is_lut()) throw Error(l.name, "is a " + l.quant_type + " linear, not a uniform one");
  QuantizedMatrix m;
  m.quant = l.quant;
  m.rows = l.rows;
  m.cols = l.cols;
  // Copies instead of casts: a foreign writer need not align tensors to 4 bytes.
  std::vector<uint32_t> words(static_cast<size_t>(l.qweight->numel()));
  std::memcpy(words.data(), l.qweight->data, l.qweight->nbytes);
  m.codes = unpack_rows(words, l.rows, l.cols, l.quant.bits);
  m.scales.resize(static_cast<size_t>(l.scales->numel()));
  std::memcpy(m.scales.data(), l.scales->data, l.scales->nbytes);
  if (l.qzeros) {
    m.zeros.resize(static_cast<size_t>(l.qzeros->numel()));
    std::memcpy(m.zeros.data(), l.qzeros->data, l.qzeros->nbytes);
  }
  return m;
}

LutMatrix unpack_lut_linear(const PackedLinear& l) {
  if (!l.is_lut()) throw Error(l.name, "is a " + l.quant_type + " linear, not a LUT one");
  LutMatrix m;
  m.bits = l.lut_bits;
  m.rows = l.rows;
  m.cols = l.cols;
  m.codes = unpack_rows(copy_values<uint32_t>(*l.qweight), l.rows, l.cols, l.lut_bits);
  m.lut = copy_values<uint16_t>(*l.lut);
  if (l.sparse_row_ptr) {
    m.row_ptr = copy_values<int32_t>(*l.sparse_row_ptr);
    if (l.sparse_col->dtype == DType::I32) {
      m.col = copy_values<int32_t>(*l.sparse_col);
    } else {
      const std::vector<uint16_t> narrow = copy_values<uint16_t>(*l.sparse_col);
      m.col.assign(narrow.begin(), narrow.end());
    }
    m.val = copy_values<uint16_t>(*l.sparse_val);
  }
  return m;
}

std::vector<float> dequantize_linear(const PackedLinear& l) {
  std::vector<float> out(static_cast<size_t>(l.rows * l.cols));
  if (l.is_lut())
    dequantize_lut(unpack_lut_linear(l), out.data());
  else
    dequantize_uniform(unpack_linear(l), out.data());
  return out;
}

}  // namespace fsq
