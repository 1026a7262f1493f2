// Scratch folders for tests, unique per process and call, under the system temp folder
// ($TMPDIR). Header-only (no LibTorch, no fsq library): the sanitizer builds compile it too.
// A test run must leave nothing in $TMPDIR (scripts/test.sh fails on leftovers): use TempDir,
// which removes its folder however the test ends (a failed ASSERT, an exception).
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>

namespace fsq::testing {

// A fresh empty folder <temp>/<prefix>-<pid>-<n> that nothing removes: only for a suite
// fixture's folder (SetUpTestSuite) that its TearDownTestSuite removes. Elsewhere use TempDir.
inline std::filesystem::path make_temp_dir_caller_removes(const std::string& prefix) {
  static std::atomic<int> counter{0};
  const auto dir = std::filesystem::temp_directory_path() /
                   (prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The old name, kept so that tests written against it still build; it leaked ~25 GB of
// scratch folders per ctest run when tests forgot to remove them.
[[deprecated("use TempDir, or make_temp_dir_caller_removes in a fixture that removes it")]]
inline std::filesystem::path make_temp_dir(const std::string& prefix) {
  return make_temp_dir_caller_removes(prefix);
}

// A fresh folder, removed with its contents on destruction. Keep the TempDir itself alive
// for as long as its path is used: `path p = TempDir("x").path();` is a removed folder.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "fsq-test") : path_(make_temp_dir_caller_removes(prefix)) {}
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // Movable, so that a value holding its scratch folder can be returned; the moved-from
  // TempDir removes nothing.
  TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}
  TempDir& operator=(TempDir&&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::filesystem::path& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace fsq::testing
