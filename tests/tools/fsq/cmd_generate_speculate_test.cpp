// fsq generate --speculate and fsq eval --speed-only --speculate (issue 59) on stories260K:
// the speculative text equals plain greedy's, the JSON carries the speculative statistics,
// and bad combinations fail in one line with nothing on stdout.
#include <gtest/gtest.h>

#include <fstream>

#include "cli_support.h"
#include "tiny_model.h"

namespace fsq::clitest {
namespace {

constexpr const char* kPrompt = "Once upon a time";

TEST(CliSpeculate, DraftAndBildPrintPlainGreedysText) {
  FSQ_REQUIRE_STORIES260K();
  const std::string model = stories260k_dir().string();
  const TempDir dir("fsq-cli-speculate");
  const std::string w8 = (dir.path() / "w8").string();
  const RunResult q = run_fsq({"quantize", "--model", model, "--out", w8, "--method", "rtn", "--bits", "8",
                               "--group-size", "32", "--progress", "off", "--threads", "1"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  const RunResult plain = run_fsq({"generate", "--model", model, "--prompt", kPrompt, "-n", "48", "--threads", "1"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const std::string json = (dir.path() / "draft.json").string();
  const RunResult draft = run_fsq({"generate", "--model", model, "--prompt", kPrompt, "-n", "48", "--threads", "1",
                                   "--speculate", "draft", "--draft", w8, "--gamma", "3", "--stats", "--json", json});
  ASSERT_EQ(draft.exit_code, 0) << draft.err;
  EXPECT_EQ(draft.out, plain.out);
  EXPECT_NE(draft.err.find("tokens per verify step"), std::string::npos) << draft.err;
  std::ifstream in(json);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["mode"], "draft");
  EXPECT_EQ(j["generated"], 48);
  EXPECT_EQ(j["ids"].size(), 48u);
  EXPECT_EQ(j["speculative"]["gamma"], 3);
  EXPECT_EQ(j["speculative"]["verify_path"], "fast decode rows");
  EXPECT_GT(j["speculative"]["acceptance_rate"].get<double>(), 0.5);  // an 8-bit copy mostly agrees
  EXPECT_GT(j["speculative"]["tokens_per_verify_step"].get<double>(), 1.0);
  const RunResult bild = run_fsq({"generate", "--model", model, "--prompt", kPrompt, "-n", "48", "--threads", "1",
                                  "--speculate", "bild", "--draft", w8, "--alpha-fb", "0.6", "--window", "5"});
  ASSERT_EQ(bild.exit_code, 0) << bild.err;
  EXPECT_EQ(bild.out, plain.out);
}

TEST(CliSpeculate, EvalSpeedOnlyReportsBothSpeedsAndEquality) {
  FSQ_REQUIRE_STORIES260K();
  const std::string model = stories260k_dir().string();
  const TempDir dir("fsq-cli-speculate-eval");
  const std::string json = (dir.path() / "eval.json").string();
  const RunResult r = run_fsq({"eval", "--model", model, "--speed-only", "--prefill-lengths", "16", "--decode-batches",
                               "1", "--decode-steps", "32", "--threads", "1", "--speculate", "draft", "--draft", model,
                               "--speculate-reps", "1", "--json", json});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("speculative decode (draft"), std::string::npos) << r.out;
  std::ifstream in(json);
  const nlohmann::json s = nlohmann::json::parse(in)["speculative"];
  EXPECT_EQ(s["same_output_as_plain"], true);
  EXPECT_EQ(s["acceptance_rate"], 1.0);  // the model as its own draft
  EXPECT_GT(s["decode_tokens_per_s"].get<double>(), 0.0);
  EXPECT_GT(s["plain_decode_tokens_per_s"].get<double>(), 0.0);
}

TEST(CliSpeculate, BadCombinationsFailInOneLine) {
  FSQ_REQUIRE_STORIES260K();
  const std::string model = stories260k_dir().string();
  const TempDir dir("fsq-cli-speculate-errors");
  testing::TinyModelSpec spec;  // vocabulary 64, not stories260K's 512
  testing::write_tiny_model(dir.path() / "other", spec);
  const std::vector<std::string> base = {"generate", "--model", model, "--prompt", kPrompt, "-n", "8"};
  const auto with = [&](std::initializer_list<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra);
    return a;
  };
  const struct {
    std::vector<std::string> args;
    const char* says;
  } cases[] = {
      {with({"--gamma", "3"}), "--gamma: needs --speculate"},
      {with({"--speculate", "draft"}), "--draft: required by --speculate draft"},
      {with({"--speculate", "draft", "--draft", model, "--alpha-rb", "1"}), "--alpha-rb: only for --speculate bild"},
      {with({"--speculate", "bild", "--draft", model, "--gamma", "2"}), "--gamma: bild's draft length is --window"},
      {with({"--speculate", "draft", "--draft", (dir.path() / "other").string()}),
       "--draft: the draft's vocabulary differs from the model's (expected 512 tokens, got 64)"},
      {{"eval", "--model", model, "--data", tinystories_val().string(), "--speculate", "draft", "--draft", model},
       "--speculate: only with --speed-only"},
  };
  for (const auto& c : cases) {
    const RunResult r = run_fsq(c.args);
    EXPECT_NE(r.exit_code, 0) << c.says;
    EXPECT_EQ(r.out, "") << c.says;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace
}  // namespace fsq::clitest
