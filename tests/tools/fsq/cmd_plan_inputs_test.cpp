// fsq plan never aborts inside its solver (issue 58 item 3): --bits 3,0, a negative width,
// --theta nan, and NaN/Inf/negative statistics in the calibration file each end in one error
// line naming the option or the file, exit 1 (before the fix: SIGABRT in COIN-OR Clp, exit
// 134, for the zero width, NaN/Inf statistics and --theta nan).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <limits>

#include "cli_support.h"
#include "text_files.h"

namespace fsq::clitest {
namespace {
namespace fs = std::filesystem;

class CliPlanInputs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(stories260k_dir() / "model.safetensors")) return;
    dir_ = make_temp_dir_caller_removes("fsq-cli-plan-inputs");
    testing::write_file(dir_ / "calib.txt", testing::tail_of(tinystories_val(), 200'000));
    RunResult r = run_fsq({"calibrate", "--model", stories260k_dir().string(), "--data", (dir_ / "calib.txt").string(),
                           "--samples", "8", "--seq-len", "128", "--threads", "1", "--progress", "off", "--out",
                           (dir_ / "calib.safetensors").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  void SetUp() override { FSQ_REQUIRE_STORIES260K(); }

  // A copy of the calibration file with value 0 of `tensor` set to `value`.
  static fs::path with_value(const std::string& tensor, float value, const std::string& name) {
    std::ifstream in(dir_ / "calib.safetensors", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    uint64_t header = 0;
    std::memcpy(&header, bytes.data(), 8);
    const nlohmann::json h = nlohmann::json::parse(bytes.substr(8, header));
    EXPECT_TRUE(h.contains(tensor)) << tensor;
    const size_t at = 8 + header + h[tensor]["data_offsets"][0].get<size_t>();
    std::memcpy(bytes.data() + at, &value, sizeof value);
    const fs::path out = dir_ / name;
    testing::write_file(out, bytes);
    return out;
  }

  static RunResult plan(const std::vector<std::string>& extra) {
    std::vector<std::string> a = {"plan", "--model", stories260k_dir().string()};
    a.insert(a.end(), extra.begin(), extra.end());
    return run_fsq(a);
  }

  static void expect_error(const RunResult& r, const std::string& names, const std::string& what) {
    EXPECT_EQ(r.exit_code, 1) << "exit " << r.exit_code << " (134: the solver aborted)\n" << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find(names), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
  }

  static inline fs::path dir_;
};

TEST_F(CliPlanInputs, ZeroNegativeAndUnsortedWidthsAreRefused) {
  const std::string calib = (dir_ / "calib.safetensors").string();
  for (const char* bits : {"3,0", "0", "3,-4", "-1,4", "4,3", "1,4"}) {
    SCOPED_TRACE(bits);
    expect_error(plan({"--calib", calib, "--target-bits", "3.5", std::string("--bits=") + bits}), "--bits", "width");
  }
  // The cluster planner too.
  expect_error(plan({"--gpu", "A100-40G", "--bits=3,0"}), "--bits", "width 0");
  expect_error(plan({"--gpu", "A100-40G", "--theta", "nan"}), "--theta", "finite");
  EXPECT_FALSE(fs::exists(dir_ / "plan.json"));
}

TEST_F(CliPlanInputs, NanInfOrNegativeStatisticsAreRefusedNamingTheFile) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::string layer0 = "model.layers.0.mlp.down_proj.input_";
  struct Case {
    std::string tensor;
    float value;
    std::string what;
  };
  const std::vector<Case> cases = {{"sqmean", nan, "mean of squares"}, {"sqmean", inf, "mean of squares"},
                                   {"sqmean", -1, "mean of squares"},  {"mean", -inf, "input mean"},
                                   {"absmax", -1, "absmax"},           {"absmax", nan, "absmax"}};
  int n = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.tensor + " " + std::to_string(c.value));
    const fs::path bad = with_value(layer0 + c.tensor, c.value, "bad" + std::to_string(n++) + ".safetensors");
    const fs::path out = dir_ / "plan.json";
    expect_error(plan({"--calib", bad.string(), "--target-bits", "3.5", "--bits", "3,4", "--out", out.string()}),
                 bad.string(), c.what);
    expect_error(plan({"--calib", bad.string(), "--gpu", "A100-40G"}), bad.string(), c.what);
    EXPECT_FALSE(fs::exists(out));
  }
  // The untouched file plans.
  RunResult ok = plan({"--calib", (dir_ / "calib.safetensors").string(), "--target-bits", "3.5", "--bits", "3,4"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

}  // namespace
}  // namespace fsq::clitest
