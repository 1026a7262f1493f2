// Whole files and file tails as strings, for tests. Header-only (sanitizer builds use it).
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

namespace fsq::testing {

// The bytes of `p`; throws when it cannot be opened.
inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Replaces `p` with `bytes`.
inline void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

// The last `bytes` bytes of `p` (all of it when shorter): calibration text that does not
// overlap evaluation windows taken from the file's start.
inline std::string tail_of(const std::filesystem::path& p, size_t bytes) {
  const std::string text = read_file(p);
  return text.substr(text.size() - std::min(text.size(), bytes));
}

}  // namespace fsq::testing
