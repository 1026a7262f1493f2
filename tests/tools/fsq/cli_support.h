// Running the fsq binary from tests and locating the stories260K fixture.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fsq::clitest {

struct RunResult {
  int exit_code = -1;  // -1 when the process did not exit normally (crash, signal)
  std::string out;
  std::string err;
};

// Runs FSQ_BINARY with `args` (shell-quoted), capturing stdout and stderr.
RunResult run_fsq(const std::vector<std::string>& args);

std::filesystem::path stories_dir();     // FSQ_SHARED_DIR/models/stories260K
std::filesystem::path tinystories_val(); // FSQ_SHARED_DIR/data/tinystories/tinystories_val.txt
bool fixture_present();

// A fresh empty folder for one test's files.
std::filesystem::path temp_dir(const std::string& name);
// Copies the stories260K config/tokenizer files (not the weights) into `dir`.
void copy_model_side_files(const std::filesystem::path& dir);
nlohmann::json read_json(const std::filesystem::path& p);
// Number of '\n' in s.
size_t lines(const std::string& s);

}  // namespace fsq::clitest

// Skips the test (with the reason) when the real stories260K fixture is not staged.
#define FSQ_REQUIRE_STORIES260K()                                                        \
  do {                                                                                   \
    if (!::fsq::clitest::fixture_present())                                              \
      GTEST_SKIP() << "stories260K fixture not found under " FSQ_SHARED_DIR              \
                   << " (models/stories260K, data/tinystories/tinystories_val.txt)";     \
  } while (0)
