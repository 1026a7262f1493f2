// Helpers for the tokenizer tests: fixture paths, golden files, scratch directories.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <unistd.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/sha256.h"
#include "formats/tokenizer.h"

namespace fsq::test {

namespace fs = std::filesystem;

inline fs::path data_dir() { return fs::path(FSQ_SOURCE_DIR) / "tests/data/tokenizers"; }
inline fs::path shared_dir() { return fs::path(FSQ_SHARED_DIR); }

// Skips the calling test when the shared fixtures (models, eval texts) are not staged.
#define FSQ_REQUIRE_SHARED(rel)                                                      \
  do {                                                                               \
    if (!std::filesystem::exists(::fsq::test::shared_dir() / (rel)))                 \
      GTEST_SKIP() << "shared fixture " << (rel) << " not found under "              \
                   << ::fsq::test::shared_dir();                                     \
  } while (0)

inline std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(read_file(p)); }

// The first n code points of UTF-8 text (the golden prefixes count Python characters).
inline std::string utf8_prefix(const std::string& text, size_t n) {
  size_t i = 0;
  for (size_t k = 0; k < n && i < text.size(); ++k) {
    ++i;
    while (i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) ++i;
  }
  return text.substr(0, i);
}

// sha256 of ids as little-endian int32, as scripts/golden/make_tokenizer_golden.py hashes them.
inline std::string ids_sha256(const std::vector<int32_t>& ids) {
  return sha256_hex(std::as_bytes(std::span(ids)));
}

// A fresh directory under the system temp dir, removed with its contents on destruction.
class ScratchDir {
 public:
  ScratchDir() {
    static int counter = 0;
    path_ = fs::temp_directory_path() /
            ("fsq-tok-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

// Writes `json` as dir/tokenizer.json and loads it.
inline std::unique_ptr<Tokenizer> load_json_tokenizer(const ScratchDir& dir,
                                                      const nlohmann::json& json) {
  write_file(dir / "tokenizer.json", json.dump());
  return load_hf_tokenizer_json(dir / "tokenizer.json");
}

}  // namespace fsq::test
