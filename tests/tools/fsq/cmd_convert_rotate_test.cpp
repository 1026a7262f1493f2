// fsq convert --rotate (QSpec's rotation, quantize/rotation): the rotated stories260K folder
// evaluates to the original's perplexity, the same seed gives the same bytes, and bad
// requests are refused in one line with nothing written.
#include <gtest/gtest.h>

#include <filesystem>

#include "cli_support.h"
#include "fixtures.h"
#include "folder_digest.h"
#include "temp_dir.h"
#include "tiny_model.h"

namespace fsq::clitest {
namespace {

namespace fs = std::filesystem;

// The rotated model computes the same function up to f32 rounding (test_rotation bounds its
// logits to 1e-4 relative, measured 1e-6 on stories260K); perplexity averages those errors.
constexpr double kSamePerplexity = 1e-5;

double perplexity(const fs::path& model, const fs::path& json) {
  RunResult r = run_fsq({"eval", "--model", model.string(), "--data", testing::tinystories_val().string(), "--seq-len",
                         "128", "--max-windows", "4", "--no-speed", "--threads", "1", "--progress", "off", "--json",
                         json.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return read_json(json)["perplexity"]["ppl"].get<double>();
}

TEST(CliConvertRotate, Stories260kKeepsItsPerplexityAndBytesPerSeed) {
  FSQ_REQUIRE_FIXTURE(testing::stories260k_dir() / "model.safetensors", testing::kHowToStageShared);
  const testing::TempDir scratch("fsq-cli-rotate");
  const fs::path& dir = scratch.path();
  for (const char* name : {"a", "b"}) {
    RunResult r = run_fsq({"convert", "--rotate", "hadamard", "--seed", "3", testing::stories260k_dir().string(),
                           "--out", (dir / name).string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  EXPECT_TRUE(fs::exists(dir / "a" / "tokenizer.model"));
  EXPECT_EQ(testing::folder_digest(dir / "a"), testing::folder_digest(dir / "b"));
  RunResult other = run_fsq({"convert", "--rotate", "hadamard", "--seed", "4", testing::stories260k_dir().string(),
                             "--out", (dir / "c").string()});
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_NE(testing::folder_digest(dir / "a"), testing::folder_digest(dir / "c"));
  const double want = perplexity(testing::stories260k_dir(), dir / "orig.json");
  EXPECT_NEAR(perplexity(dir / "a", dir / "rot.json"), want, kSamePerplexity * want);
}

TEST(CliConvertRotate, RefusesSixteenBitOutputAndUnknownHadamardOrders) {
  const testing::TempDir scratch("fsq-cli-rotate-bad");
  const fs::path& dir = scratch.path();
  testing::TinyModelSpec spec;
  spec.hidden = 56;  // 56 = 7 * 8: no Hadamard matrix built here
  testing::write_tiny_model(dir / "tiny", spec);
  struct Case {
    std::vector<std::string> args;
    const char* says;
  };
  for (const Case& c : {Case{{"--rotate", "hadamard", "--dtype", "bf16"}, "--rotate writes f32"},
                        Case{{"--rotate", "hadamard"}, "no Hadamard matrix of order 56"},
                        Case{{"--rotate", "spin"}, "--rotate"}}) {
    std::vector<std::string> args{"convert", (dir / "tiny").string(), "--out", (dir / "out").string()};
    args.insert(args.end(), c.args.begin(), c.args.end());
    RunResult r = run_fsq(args);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir / "out"));
  }
  RunResult ok = run_fsq({"convert", "--rotate", "random", (dir / "tiny").string(), "--out", (dir / "out").string()});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

}  // namespace
}  // namespace fsq::clitest
