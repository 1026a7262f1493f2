// Helpers for the tokenizer tests: fixture paths, golden files, scratch directories.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/sha256.h"
#include "formats/tokenizer.h"
#include "fixtures.h"
#include "temp_dir.h"
#include "text_files.h"

namespace fsq::test {

namespace fs = std::filesystem;

inline fs::path data_dir() { return fs::path(FSQ_SOURCE_DIR) / "tests/data/tokenizers"; }
using ::fsq::testing::shared_dir;  // FSQ_REQUIRE_SHARED(rel) is in fixtures.h

using ::fsq::testing::read_file;
using ::fsq::testing::write_file;

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

// Scratch folders (tests/support/temp_dir.h).
using ::fsq::testing::TempDir;

// Writes `json` as dir/tokenizer.json and loads it.
inline std::unique_ptr<Tokenizer> load_json_tokenizer(const TempDir& dir,
                                                      const nlohmann::json& json) {
  write_file(dir / "tokenizer.json", json.dump());
  return load_hf_tokenizer_json(dir / "tokenizer.json");
}

}  // namespace fsq::test
