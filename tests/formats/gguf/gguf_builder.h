// Builds GGUF files byte by byte for the reader tests, independently of the library's
// reader, so malformed files can be made by changing one field.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "temp_dir.h"

namespace fsq::test {

namespace fs = std::filesystem;

// GGUF value type ids (the file format's numbers, spelled out here on purpose).
enum : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6,
  kBool = 7, kStr = 8, kArr = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};
// ggml type ids used by the tests.
enum : uint32_t { kGgmlF32 = 0, kGgmlF16 = 1, kGgmlQ4_0 = 2, kGgmlQ8_0 = 8, kGgmlQ4_K = 12 };

// Little-endian bytes of a trivially copyable value.
template <typename T>
std::string le(T x) {
  std::string s(sizeof x, '\0');
  std::memcpy(s.data(), &x, sizeof x);
  return s;
}

inline std::string gstr(const std::string& s) { return le<uint64_t>(s.size()) + s; }

// Array value bytes (without the outer value type): element type, count, elements.
inline std::string garr(uint32_t elem_type, uint64_t count, const std::string& elems) {
  return le<uint32_t>(elem_type) + le<uint64_t>(count) + elems;
}

class GgufBuilder {
 public:
  std::string magic = "GGUF";
  uint32_t version = 3;
  uint64_t alignment = 32;  // used to place data and pad; write general.alignment yourself
  // When set, written instead of the real counts.
  int64_t n_kv_override = -1;
  int64_t n_tensors_override = -1;

  // A key-value pair; `value` is the value's bytes as they appear after the type.
  GgufBuilder& kv(const std::string& key, uint32_t type, const std::string& value) {
    kvs_ += gstr(key) + le<uint32_t>(type) + value;
    ++n_kv_;
    return *this;
  }

  // A key-value pair given as raw bytes (to corrupt the key or the type field).
  GgufBuilder& raw_kv(const std::string& bytes) {
    kvs_ += bytes;
    ++n_kv_;
    return *this;
  }

  // A tensor info with an explicit offset (relative to the data section).
  GgufBuilder& info(const std::string& name, const std::vector<uint64_t>& dims, uint32_t type, uint64_t offset) {
    infos_ += gstr(name) + le<uint32_t>(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) infos_ += le<uint64_t>(d);
    infos_ += le<uint32_t>(type) + le<uint64_t>(offset);
    ++n_tensors_;
    return *this;
  }

  // A tensor whose bytes are appended to the data section at the next aligned offset.
  GgufBuilder& tensor(const std::string& name, const std::vector<uint64_t>& dims, uint32_t type,
                      const std::string& bytes) {
    pad_data();
    info(name, dims, type, data_.size());
    data_ += bytes;
    return *this;
  }

  // Raw bytes appended to the data section (e.g. to truncate or extend it).
  std::string& data() { return data_; }

  std::string bytes() const {
    std::string out = magic + le<uint32_t>(version);
    out += le<uint64_t>(n_tensors_override >= 0 ? static_cast<uint64_t>(n_tensors_override) : n_tensors_);
    out += le<uint64_t>(n_kv_override >= 0 ? static_cast<uint64_t>(n_kv_override) : n_kv_);
    out += kvs_ + infos_;
    while (out.size() % alignment != 0) out += '\0';
    return out + data_;
  }

 private:
  void pad_data() {
    while (data_.size() % alignment != 0) data_ += '\0';
  }

  std::string kvs_, infos_, data_;
  uint64_t n_kv_ = 0, n_tensors_ = 0;
};

// A scratch file in its own TempDir, removed on destruction.
class TempFile {
 public:
  explicit TempFile(const std::string& name) : dir_("fsq-gguf-test"), path_(dir_ / name) {}

  const fs::path& write(const std::string& bytes) const {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path_;
  }
  const fs::path& path() const { return path_; }

 private:
  ::fsq::testing::TempDir dir_;
  fs::path path_;
};

}  // namespace fsq::test
