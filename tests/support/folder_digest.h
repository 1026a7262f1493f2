// A folder's contents as text, to compare two folders byte for byte.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "common/sha256.h"

namespace fsq::testing {

// One line "<name> <sha256>" per file directly in `dir`, sorted by name.
inline std::string folder_digest(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::string all;
  for (const auto& f : files) all += f.filename().string() + " " + sha256_file(f) + "\n";
  return all;
}

}  // namespace fsq::testing
