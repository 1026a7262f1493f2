// fsq profile end to end on stories260K: the profile file it writes (every width and the
// head fitted from positive per-layer times), fsq plan taking it for a "cpu" device, and one
// clear error line for what cannot be profiled or planned with it.
#include <gtest/gtest.h>

#include "cli_support.h"
#include "text_files.h"

namespace fsq::clitest {
namespace {
namespace fs = std::filesystem;

void expect_profile_error(const RunResult& r, const std::string& mentions) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find(mentions), std::string::npos) << r.err;
}

class CliProfileStories260k : public ::testing::Test {
 protected:
  void SetUp() override {
    FSQ_REQUIRE_STORIES260K();
    dir_ = make_temp_dir_caller_removes("fsq-cli-profile");
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  // A small grid: 6 prompt shapes and 4 decode shapes per width, each timed once.
  RunResult profile(const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"profile", "--model", stories260k_dir().string(), "--prefill-batches", "1,2",
                                     "--prefill-lengths", "8,16,32", "--decode-batches", "1,2", "--decode-contexts", "8,32",
                                     "--decode-steps", "2", "--min-seconds", "0", "--threads", "1", "--work-dir", dir_.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_fsq(args);
  }
  fs::path dir_;
};

TEST_F(CliProfileStories260k, WritesAFittedProfileThatPlanUsesForTheCpu) {
  const fs::path out = dir_ / "cpu.json";
  RunResult r = profile({"--widths", "4,16", "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote " + out.string()), std::string::npos) << r.out;
  nlohmann::json j = read_json(out);
  EXPECT_EQ(j["kind"], "latency profile");
  EXPECT_EQ(j["device"]["name"], "cpu");
  EXPECT_EQ(j["model"]["hidden"], 64);
  EXPECT_EQ(j["widths"], nlohmann::json({4, 16}));
  // Per width 6 prompt and 4 decode points; the head's 6 + 4 once.
  ASSERT_EQ(j["samples"].size(), 30u);
  for (const auto& s : j["samples"]) EXPECT_GT(s["seconds"].get<double>(), 0.0) << s.dump();
  for (const char* w : {"4", "16", "head"})
    for (const char* phase : {"prefill", "decode"}) EXPECT_TRUE(j["fits"][w][phase]["coef"].is_array()) << w << " " << phase;
  // The packed checkpoints were temporary.
  for (const auto& e : fs::directory_iterator(dir_)) EXPECT_EQ(e.path().filename().string().rfind("fsq-profile", 0), std::string::npos) << e.path();

  RunResult plan = run_fsq({"plan", "--model", stories260k_dir().string(), "--gpu", "cpu", "--profile", out.string(), "--bits",
                            "4,16", "--batch", "4", "--prompt-len", "64", "--new-tokens", "16", "--json"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  nlohmann::json p = nlohmann::json::parse(plan.out);
  ASSERT_TRUE(p["plan"]["found"].get<bool>()) << plan.out;
  EXPECT_EQ(p["cost_model"]["profiles"][0]["device"], "cpu");
  EXPECT_GT(p["plan"]["throughput_tokens_s"].get<double>(), 0.0);

  expect_profile_error(run_fsq({"plan", "--model", stories260k_dir().string(), "--gpu", "cpu", "--profile", out.string(),
                                 "--bits", "3,4"}),
                        "no 3-bit layers in this profile");
  expect_profile_error(run_fsq({"plan", "--model", stories260k_dir().string(), "--gpu", "T4-16G", "--profile", out.string(),
                                 "--bits", "4,16"}),
                        "which the cluster does not have");
  expect_profile_error(run_fsq({"plan", "--preset", "llama-2-7b", "--gpu", "cpu", "--profile", out.string(), "--bits", "4,16"}),
                        "run fsq profile on this model");
}

TEST_F(CliProfileStories260k, WhatCannotBeProfiledGetsOneErrorLine) {
  const fs::path out = dir_ / "x.json";
  expect_profile_error(profile({"--device", "cuda", "--out", out.string()}), "CUDA runtime cannot run a whole model yet");
  expect_profile_error(profile({"--widths", "5", "--out", out.string()}), "expected 3, 4, 8 or 16");
  expect_profile_error(profile({"--decode-contexts", "600", "--out", out.string()}), "exceeds the model's 512 positions");
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace fsq::clitest
