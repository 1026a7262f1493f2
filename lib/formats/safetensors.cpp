// safetensors reader. The file is untrusted input: every length, offset and type in the
// header is checked before any pointer into the mapping is formed, so a hostile or
// truncated file yields one fsq::Error line instead of an out-of-bounds read.
//
// Layout: u64 little-endian header length N, N bytes of UTF-8 JSON, then the data section.
// The JSON maps tensor name -> {"dtype", "shape", "data_offsets": [begin, end)} (offsets
// relative to the data section) plus an optional "__metadata__" string->string object.
#include "formats/safetensors.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string_view>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/utf8.h"
#include "common/json_file.h"
#include "formats/json_duplicate_keys.h"

namespace fsq {
namespace {

using json = nlohmann::json;

// Same cap as the reference Rust implementation: real headers are a few hundred KB.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// Flattens a library message (nlohmann quotes the raw input it read) onto one line.
std::string one_line_text(std::string_view s) {
  std::string q = quote_name(s);
  return q.substr(1, q.size() - 2);
}

std::string span_text(uint64_t b, uint64_t e) {
  return "[" + std::to_string(b) + ", " + std::to_string(e) + ")";
}

const char* json_type(const json& v) {
  if (v.is_number_float()) return "a float";
  if (v.is_number_integer()) return v.get<int64_t>() < 0 ? "a negative integer" : "an integer";
  return v.type_name();
}

// Parses JSON, rejecting duplicate keys at any depth (nlohmann would silently keep the
// last one, so a file could show one tensor to us and another to a different reader).
json parse_header(std::string_view text, const std::string& where) {
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {  // parse errors and number overflow alike
    throw Error(where, "header is not valid JSON: " + json_error_text(e));
  }
  if (auto duplicate = first_duplicate_key(text))
    throw Error(where, "header has the key " + quote_name(*duplicate) + " twice");
  return j;
}

std::optional<uint64_t> as_u64(const json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  return std::nullopt;
}

// Bytes needed by shape x dtype; nullopt when the element count or byte size overflows
// (a zero dimension makes the tensor empty whatever the other dimensions are).
std::optional<uint64_t> checked_nbytes(const std::vector<int64_t>& shape, size_t elem) {
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  uint64_t n = 1;
  constexpr auto kMaxNumel = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  for (int64_t d : shape) {
    auto u = static_cast<uint64_t>(d);
    if (n > kMaxNumel / u) return std::nullopt;
    n *= u;
  }
  if (n > std::numeric_limits<uint64_t>::max() / elem) return std::nullopt;
  return n * elem;
}

struct Entry {
  TensorView view;
  uint64_t begin = 0;
  uint64_t end = 0;
};

Entry parse_entry(const std::string& name, const json& v, uint64_t data_size,
                  const std::string& where) {
  const std::string t = "tensor " + quote_name(name);
  if (!v.is_object()) throw Error(where, t + ": entry must be a JSON object, got " + json_type(v));
  for (const auto& [key, _] : v.items())
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      throw Error(where, t + ": unexpected key " + quote_name(key));
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!v.contains(key)) throw Error(where, t + ": missing \"" + key + "\"");

  Entry e;
  e.view.name = name;
  const json& dt = v["dtype"];
  if (!dt.is_string()) throw Error(where, t + ": \"dtype\" must be a string, got " + json_type(dt));
  auto dtype = dtype_from_name(dt.get_ref<const std::string&>());
  if (!dtype) throw Error(where, t + ": unknown dtype " + quote_name(dt.get_ref<const std::string&>()));
  e.view.dtype = *dtype;

  const json& shape = v["shape"];
  if (!shape.is_array()) throw Error(where, t + ": \"shape\" must be an array, got " + json_type(shape));
  for (const json& d : shape) {
    auto u = as_u64(d);
    if (!u || *u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      throw Error(where, t + ": shape dimension must be a non-negative integer, got " +
                             (d.is_number() ? one_line_text(d.dump()) : std::string(json_type(d))));
    e.view.shape.push_back(static_cast<int64_t>(*u));
  }

  const json& off = v["data_offsets"];
  if (!off.is_array() || off.size() != 2)
    throw Error(where, t + ": \"data_offsets\" must be an array of 2 integers");
  auto b = as_u64(off[0]), en = as_u64(off[1]);
  if (!b || !en) throw Error(where, t + ": \"data_offsets\" must be non-negative integers");
  e.begin = *b;
  e.end = *en;
  if (e.begin > e.end)
    throw Error(where, t + ": span " + span_text(e.begin, e.end) + " ends before it begins");
  if (e.end > data_size)
    throw Error(where, t + ": span " + span_text(e.begin, e.end) +
                           " runs past the end of the data section (" + std::to_string(data_size) +
                           " bytes)");
  auto need = checked_nbytes(e.view.shape, dtype_size(e.view.dtype));
  if (!need)
    throw Error(where, t + ": shape " + shape_text(e.view.shape) + " x " +
                           std::string(dtype_name(e.view.dtype)) + " overflows 64 bits");
  if (e.end - e.begin != *need)
    throw Error(where, t + " span " + span_text(e.begin, e.end) + " is " +
                           std::to_string(e.end - e.begin) + " bytes but shape " +
                           shape_text(e.view.shape) + " x " +
                           std::string(dtype_name(e.view.dtype)) + " needs " +
                           std::to_string(*need));
  e.view.nbytes = static_cast<size_t>(*need);
  return e;
}

std::map<std::string, std::string> parse_metadata(const json& v, const std::string& where) {
  if (!v.is_object())
    throw Error(where, "__metadata__ must be an object of strings, got " + std::string(json_type(v)));
  std::map<std::string, std::string> out;
  for (const auto& [key, val] : v.items()) {
    if (!val.is_string())
      throw Error(where, "__metadata__ value for " + quote_name(key) + " must be a string, got " +
                             json_type(val));
    out[key] = val.get<std::string>();
  }
  return out;
}

// Sorted by offset, the spans must tile the data section exactly: a gap or trailing bytes
// mean the file is not what its header says, and an overlap aliases two tensors.
void check_tiling(std::vector<Entry>& entries, uint64_t data_size, const std::string& where) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end, a.view.name) < std::tie(b.begin, b.end, b.view.name);
  });
  uint64_t cursor = 0;
  const Entry* prev = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < cursor)
      throw Error(where, "tensor " + quote_name(e.view.name) + " span " + span_text(e.begin, e.end) +
                             " overlaps tensor " + quote_name(prev->view.name) + " span " +
                             span_text(prev->begin, prev->end));
    if (e.begin > cursor)
      throw Error(where, "gap of " + std::to_string(e.begin - cursor) + " bytes " +
                             span_text(cursor, e.begin) + " in the data section before tensor " +
                             quote_name(e.view.name));
    cursor = e.end;
    prev = &e;
  }
  if (cursor != data_size)
    throw Error(where, std::to_string(data_size - cursor) + " trailing bytes after the last tensor (" +
                           "data section is " + std::to_string(data_size) + " bytes, tensors end at " +
                           std::to_string(cursor) + ")");
}

}  // namespace

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::shared_ptr<const SafetensorsFile> SafetensorsFile::open(const std::filesystem::path& path) {
  return std::make_shared<const SafetensorsFile>(MappedFile(path));
}

SafetensorsFile::SafetensorsFile(MappedFile file) : file_(std::move(file)) {
  const std::string where = file_.path().string();
  const size_t size = file_.size();
  if (size < 8)
    throw Error(where, "file is " + std::to_string(size) +
                           " bytes, too short for the 8-byte header length");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i)
    header_len = header_len << 8 | static_cast<uint8_t>(file_.data()[i]);
  if (header_len > kMaxHeaderBytes)
    throw Error(where, "header length " + std::to_string(header_len) + " exceeds the limit of " +
                           std::to_string(kMaxHeaderBytes) + " bytes");
  if (header_len > size - 8)
    throw Error(where, "header length " + std::to_string(header_len) +
                           " runs past the end of the file (" + std::to_string(size) + " bytes)");

  std::string_view text(reinterpret_cast<const char*>(file_.data() + 8), header_len);
  if (size_t bad = find_invalid_utf8(text); bad != std::string_view::npos)
    throw Error(where, "header is not valid UTF-8 (byte " + std::to_string(bad) + " of the header)");
  const json header = parse_header(text, where);
  if (!header.is_object())
    throw Error(where, "header must be a JSON object, got " + std::string(json_type(header)));

  const uint64_t data_size = size - 8 - header_len;
  std::vector<Entry> entries;
  entries.reserve(header.size());
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__")
      metadata_ = parse_metadata(value, where);
    else
      entries.push_back(parse_entry(name, value, data_size, where));
  }
  check_tiling(entries, data_size, where);

  const std::byte* base = file_.data() + 8 + header_len;
  tensors_.reserve(entries.size());
  for (Entry& e : entries) {
    e.view.data = base + e.begin;
    index_.emplace(e.view.name, tensors_.size());
    tensors_.push_back(std::move(e.view));
  }
}

const TensorView* SafetensorsFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace fsq
