// A folder's contents as text, to compare two folders byte for byte.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "common/sha256.h"

namespace fsq::testing {

// One line "<relative path> <sha256>" per file below `dir` (and "<relative path>/" per
// subfolder), sorted by path; for a flat folder, one line per file by name.
inline std::string folder_digest(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> entries;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  std::string all;
  for (const auto& p : entries) {
    const std::string name = std::filesystem::relative(p, dir).string();
    if (std::filesystem::is_directory(std::filesystem::symlink_status(p))) all += name + "/\n";
    else if (std::filesystem::is_regular_file(std::filesystem::symlink_status(p))) all += name + " " + sha256_file(p) + "\n";
    else all += name + " (link or special file)\n";
  }
  return all;
}

}  // namespace fsq::testing
