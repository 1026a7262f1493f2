// GGUF reader (versions 2 and 3): mmap, zero-copy tensor views, every field validated
// before use. The file is untrusted input: a malformed one yields one fsq::Error line
// naming the file (and the key or tensor at fault), never an out-of-bounds read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "common/mapped_file.h"
#include "formats/gguf/ggml_types.h"

namespace fsq {

// Metadata value types; the numbers are the ids stored in the file.
enum class GgufType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6,
  BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};
std::string_view gguf_type_name(GgufType t);  // "UINT32", ...
// Bytes of one element of a fixed-size type; 0 for STRING and ARRAY.
size_t gguf_scalar_size(GgufType t);

// A metadata array. Numbers are kept as their raw little-endian bytes (an array of 49152
// token types costs what it costs in the file); strings and nested arrays are unpacked.
class GgufArray {
 public:
  GgufType type() const { return type_; }  // element type
  size_t size() const { return size_; }
  // Element i converted to the asked kind; throw fsq::Error when the element type does
  // not convert (string vs number) or the value does not fit (negative to u64).
  int64_t get_i64(size_t i) const;
  uint64_t get_u64(size_t i) const;
  double get_f64(size_t i) const;
  bool get_bool(size_t i) const;
  const std::string& get_string(size_t i) const;
  const GgufArray& get_array(size_t i) const;
  // Whole-array views for the common cases (the same conversions element by element).
  const std::vector<std::string>& strings() const;  // throws unless type() == STRING
  std::vector<int64_t> to_i64() const;
  std::vector<double> to_f64() const;
  // The elements as stored: little-endian bytes of a numeric array (empty for STRING and
  // ARRAY), and the unpacked elements of a nested-array array (what a writer copies).
  std::span<const std::byte> raw() const { return raw_; }
  const std::vector<GgufArray>& arrays() const { return arrays_; }

  // Built by the reader; `raw` holds size * element-size bytes for numeric types.
  GgufArray(GgufType type, size_t size, std::vector<std::byte> raw, std::vector<std::string> strings,
            std::vector<GgufArray> arrays)
      : type_(type), size_(size), raw_(std::move(raw)), strings_(std::move(strings)), arrays_(std::move(arrays)) {}

 private:
  void check(size_t i) const;  // throws when i is out of range
  GgufType type_;
  size_t size_;
  std::vector<std::byte> raw_;
  std::vector<std::string> strings_;
  std::vector<GgufArray> arrays_;
};

// One metadata value. The variant index equals the GgufType id.
struct GgufValue {
  std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool, std::string, GgufArray,
               uint64_t, int64_t, double>
      v;
  GgufType type() const { return static_cast<GgufType>(v.index()); }
};

struct GgufTensorInfo {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::vector<int64_t> dims;  // ggml order: dims[0] (ne[0]) is the contiguous dimension
  int64_t n_elements = 0;
  uint64_t offset = 0;        // from the start of the data section
  size_t nbytes = 0;
  const std::byte* data = nullptr;

  // Row-major shape (PyTorch / safetensors order): dims reversed.
  std::vector<int64_t> shape() const { return {dims.rbegin(), dims.rend()}; }
};

class GgufFile {
 public:
  static constexpr uint64_t kDefaultAlignment = 32;
  static constexpr size_t kMaxDims = 4;

  // Maps and validates the whole file; throws fsq::Error("<path>", "<problem>").
  static std::shared_ptr<const GgufFile> open(const std::filesystem::path& path);
  // Parses a copy of `bytes`; `name` stands for the file in error messages (fuzzing, tests).
  static std::shared_ptr<const GgufFile> open_bytes(const std::string& name, std::span<const std::byte> bytes);

  const std::string& name() const { return name_; }  // the path, or the open_bytes name
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // where the data section starts

  // Metadata in file order, and lookup (nullptr when absent).
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
  const GgufValue* find(const std::string& key) const;

  // Typed getters: throw fsq::Error naming the file and key when the key is missing
  // ("missing key 'general.architecture'") or its type does not convert. Integers of any
  // width convert to i64/u64 when in range; f64 takes FLOAT32/FLOAT64 and integers.
  const std::string& get_string(const std::string& key) const;
  uint64_t get_u64(const std::string& key) const;
  int64_t get_i64(const std::string& key) const;
  double get_f64(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  const GgufArray& get_array(const std::string& key) const;
  // Whole arrays with the element type checked against the file and key (tokens, merges,
  // scores, token types): strings only; any integer type; any number.
  const std::vector<std::string>& get_strings(const std::string& key) const;
  std::vector<int64_t> get_i64s(const std::string& key) const;
  std::vector<double> get_f64s(const std::string& key) const;
  // The required-key path the GGUF -> model step uses (same as get_string).
  const std::string& require_string(const std::string& key) const { return get_string(key); }

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }  // in file order
  const GgufTensorInfo* find_tensor(const std::string& name) const;          // nullptr if absent

  GgufFile(std::string name, std::variant<MappedFile, std::vector<std::byte>> storage);  // use open()

 private:
  void parse();
  const GgufValue& require(const std::string& key) const;
  [[noreturn]] void wrong_type(const std::string& key, const GgufValue& v, const char* want) const;

  std::string name_;
  std::variant<MappedFile, std::vector<std::byte>> storage_;
  std::span<const std::byte> bytes_;
  uint32_t version_ = 0;
  uint64_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::unordered_map<std::string, size_t> key_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace fsq
