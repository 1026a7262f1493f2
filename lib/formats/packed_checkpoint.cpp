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

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

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
const TensorView* expect_tensor(const SafetensorsFile& file, const PackedLinear& l, const char* suffix,
                                DType dtype, const std::vector<int64_t>& shape) {
  const std::string where = file.path().string();
  const std::string name = l.name + suffix;
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

PackedLinear read_linear(const std::string& name, const json& entry, const SafetensorsFile& file,
                         const std::string& manifest_where) {
  const std::string what = "linear " + quote_name(name);
  if (!entry.is_object()) throw Error(manifest_where, what + " must be an object");
  PackedLinear l;
  l.name = name;
  l.quant_type = string_member(entry, "quant_type", manifest_where, what);
  l.quant = find_uniform_quant(l.quant_type, manifest_where + ": " + what);
  const json& shape = member(entry, "shape", manifest_where, what);
  if (!shape.is_array() || shape.size() != 2)
    throw Error(manifest_where, what + ": shape must hold two positive integers");
  l.rows = positive_dim(shape[0], manifest_where, what);
  l.cols = positive_dim(shape[1], manifest_where, what);
  if (l.cols % l.quant.group_cols(l.cols) != 0)
    throw Error(manifest_where, what + ": " + std::to_string(l.cols) +
                                    " columns are not a multiple of the group size of " + l.quant_type);
  l.method = string_member(entry, "method", manifest_where, what);
  l.options = member(entry, "options", manifest_where, what);

  const std::string where = file.path().string();
  const int64_t groups = l.quant.group_count(l.cols);
  l.qweight = expect_tensor(file, l, kQWeightSuffix, DType::I32,
                            {l.rows, packed_words_per_row(l.quant.bits, l.cols)});
  l.scales = expect_tensor(file, l, kScalesSuffix, DType::F16, {l.rows, groups});
  if (!l.quant.symmetric) {
    l.qzeros = expect_tensor(file, l, kQZerosSuffix, DType::U8, {l.rows, groups});
  } else if (file.find(name + kQZerosSuffix)) {
    throw Error(where, "tensor " + quote_name(name + kQZerosSuffix) + " is present but " + l.quant_type +
                           " is symmetric");
  }
  if (file.find(name + ".weight"))
    throw Error(where, "tensor " + quote_name(name + ".weight") + " is present next to quantized linear " +
                           quote_name(name));
  l.bias = file.find(name + kBiasSuffix);
  check_values(l, where);
  return l;
}

// Every tensor in the file is listed in fsq.json and vice versa; with `verify`, each
// tensor's bytes hash to the recorded sha256.
void check_tensor_hashes(const SafetensorsFile& file, const json& hashes, const std::string& manifest_where,
                         bool verify) {
  const std::string where = file.path().string();
  for (const TensorView& t : file.tensors())
    if (!hashes.contains(t.name))
      throw Error(manifest_where,
                  "tensor " + quote_name(t.name) + " of model.safetensors is not in tensor_sha256");
  for (const auto& [name, expected] : hashes.items()) {
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
  c.weights_ = SafetensorsFile::open(dir / kPackedWeightsFile);

  std::set<std::string> quantized_tensors;
  for (const auto& [name, entry] : c.manifest_["linears"].items()) {
    c.linears_.push_back(read_linear(name, entry, *c.weights_, manifest_where));
    for (const char* suffix : {kQWeightSuffix, kScalesSuffix, kQZerosSuffix})
      quantized_tensors.insert(name + suffix);
  }
  check_tensor_hashes(*c.weights_, c.manifest_["tensor_sha256"], manifest_where, opts.verify_sha256);
  const std::string qweight_suffix = kQWeightSuffix;
  for (const TensorView& t : c.weights_->tensors()) {
    if (quantized_tensors.count(t.name)) continue;
    if (t.name.ends_with(qweight_suffix))  // packed codes nobody describes: unusable
      throw Error(manifest_where, "tensor " + quote_name(t.name) + " has no entry in \"linears\"");
    c.dense_.push_back(&t);
  }
  return c;
}

std::set<std::string> PackedCheckpoint::linear_tensor_names() const {
  std::set<std::string> names;
  for (const PackedLinear& l : linears_)
    for (const TensorView* t : {l.qweight, l.scales, l.qzeros, l.bias})
      if (t != nullptr) names.insert(t->name);
  return names;
}

const PackedLinear* PackedCheckpoint::find_linear(const std::string& name) const {
  auto it = std::lower_bound(linears_.begin(), linears_.end(), name,
                             [](const PackedLinear& l, const std::string& n) { return l.name < n; });
  return it != linears_.end() && it->name == name ? &*it : nullptr;
}

QuantizedMatrix unpack_linear(const PackedLinear& l) {
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

std::vector<float> dequantize_linear(const PackedLinear& l) {
  const QuantizedMatrix m = unpack_linear(l);
  std::vector<float> out(static_cast<size_t>(l.rows * l.cols));
  dequantize_uniform(m, out.data());
  return out;
}

}  // namespace fsq
