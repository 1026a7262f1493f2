#include "stories260k_quantize_suite.h"

#include "text_files.h"

namespace fsq::clitest {
namespace fs = std::filesystem;

fs::path Stories260kQuantizeSuite::dir_;

void Stories260kQuantizeSuite::SetUpTestSuite() {
  if (!fs::exists(tinystories_val())) return;  // each test starts with FSQ_REQUIRE_STORIES260K
  dir_ = make_temp_dir_caller_removes("fsq-cli-quantize-suite");
  testing::write_file(dir_ / "calib.txt", testing::tail_of(tinystories_val(), kCalibBytes));
}

void Stories260kQuantizeSuite::TearDownTestSuite() {
  if (!dir_.empty()) fs::remove_all(dir_);
  dir_.clear();
}

RunResult Stories260kQuantizeSuite::quantize(const fs::path& out, const std::vector<std::string>& options) {
  std::vector<std::string> args = {"quantize", "--model", stories260k_dir().string(), "--out", out.string(),
                                   "--calib-data", (dir_ / "calib.txt").string(), "--samples", "16",
                                   "--seq-len", "256", "--threads", "1", "--progress", "off"};
  args.insert(args.end(), options.begin(), options.end());
  return run_fsq(args);
}

}  // namespace fsq::clitest
