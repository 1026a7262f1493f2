// Scratch folders for tests, unique per process and call, under the system temp folder.
// Header-only (no LibTorch, no fsq library): the sanitizer builds compile it too.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <system_error>

namespace fsq::testing {

// A fresh empty folder <temp>/<prefix>-<pid>-<n>; the caller removes it.
inline std::filesystem::path make_temp_dir(const std::string& prefix) {
  static std::atomic<int> counter{0};
  const auto dir = std::filesystem::temp_directory_path() /
                   (prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// make_temp_dir's folder, removed with its contents on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "fsq-test") : path_(make_temp_dir(prefix)) {}
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace fsq::testing
