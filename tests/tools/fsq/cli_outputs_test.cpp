// Outputs never destroy inputs: an output path that is an input (directly or through a link),
// lies inside an input model folder, or names an existing file without --force is refused
// before any work with one error line, and every file stays byte-identical.
#include <gtest/gtest.h>

#include <map>

#include "cli_support.h"
#include "common/sha256.h"
#include "folder_digest.h"
#include "text_files.h"

namespace fsq::clitest {
namespace {
namespace fs = std::filesystem;

using testing::write_file;

// A copy of stories260K (so nothing shared can be harmed) and a short text beside it.
class CliOutputs : public ::testing::Test {
 protected:
  void SetUp() override {
    FSQ_REQUIRE_STORIES260K();
    dir_ = make_temp_dir_caller_removes("fsq-cli-outputs");
    model_ = dir_ / "model";
    fs::copy(stories260k_dir(), model_, fs::copy_options::recursive);
    text_ = dir_ / "text.txt";
    write_file(text_, testing::tail_of(tinystories_val(), 20'000));
    before_ = testing::folder_digest(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // The run failed with one error line naming `option`, and nothing under dir_ changed.
  void expect_refused(const RunResult& r, const std::string& option, const std::string& why) {
    EXPECT_GT(r.exit_code, 0) << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find(option), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
    EXPECT_EQ(testing::folder_digest(dir_), before_) << "an input or output changed: " << r.err;
  }

  std::vector<std::string> eval_args(const fs::path& json) {
    return {"eval", "--model", model_.string(), "--data", text_.string(), "--seq-len", "64", "--max-windows", "1",
            "--no-speed", "--threads", "1", "--progress", "off", "--json", json.string()};
  }

  fs::path dir_, model_, text_;
  std::string before_;
};

TEST_F(CliOutputs, EvalJsonOntoTheWeightsTheTextOrIntoTheModelFolderIsRefused) {
  expect_refused(run_fsq(eval_args(model_ / "model.safetensors")), "--json", "inside the input folder");
  expect_refused(run_fsq(eval_args(text_)), "--json", "same file");
  expect_refused(run_fsq(eval_args(model_ / "report.json")), "--json", "inside the input folder");
  // Through a symbolic link the target is still the text.
  const TempDir link_dir("fsq-cli-outputs-link");
  const fs::path link = link_dir / "report.json";
  fs::create_symlink(text_, link);
  auto with_force = eval_args(link);
  with_force.push_back("--force");
  expect_refused(run_fsq(with_force), "--json", "same file");
}

TEST_F(CliOutputs, ExistingFileNeedsForceAndIsThenReplaced) {
  const TempDir report_dir("fsq-cli-outputs-report");
  const fs::path report = report_dir / "report.json";
  write_file(report, "keep me");
  RunResult refused = run_fsq(eval_args(report));
  EXPECT_GT(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("--force"), std::string::npos) << refused.err;
  EXPECT_EQ(testing::read_file(report), "keep me");

  auto args = eval_args(report);
  args.push_back("--force");
  RunResult replaced = run_fsq(args);
  EXPECT_EQ(replaced.exit_code, 0) << replaced.err;
  EXPECT_TRUE(read_json(report).contains("perplexity"));
}

TEST_F(CliOutputs, InspectCalibrateAndQuantizeRefuseOutputsOnTheirInputs) {
  expect_refused(run_fsq({"inspect", model_.string(), "--json", (model_ / "config.json").string(), "--force"}),
                 "--json", "inside the input folder");
  expect_refused(run_fsq({"calibrate", "--model", model_.string(), "--data", text_.string(), "--samples", "2",
                          "--seq-len", "32", "--out", (model_ / "model.safetensors").string(), "--force"}),
                 "--out", "inside the input folder");
  expect_refused(run_fsq({"calibrate", "--model", model_.string(), "--data", text_.string(), "--samples", "2",
                          "--seq-len", "32", "--out", text_.string(), "--force"}),
                 "--out", "same file");
  expect_refused(run_fsq({"quantize", "--model", model_.string(), "--method", "rtn", "--out",
                          (model_ / "q4").string()}),
                 "--out", "inside the input folder");
  expect_refused(run_fsq({"quantize", "--model", model_.string(), "--method", "awq", "--calib-data", text_.string(),
                          "--out", (dir_ / "q4").string(), "--json", text_.string(), "--force"}),
                 "--json", "same file");
}

TEST_F(CliOutputs, OutputFolderAroundTheInputIsRefused) {
  // An output folder that would contain the model (its parent) exists and is not empty anyway,
  // but the check names the real problem first.
  expect_refused(run_fsq({"quantize", "--model", model_.string(), "--method", "rtn", "--out", dir_.string()}),
                 "--out", "would contain the input");
}

}  // namespace
}  // namespace fsq::clitest
