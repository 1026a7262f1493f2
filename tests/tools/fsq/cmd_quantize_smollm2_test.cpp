// AWQ against RTN on the real-model fixture SmolLM2-135M (f32 folder converted from the
// Q4_1 GGUF), at every bit width the issue names: w4 and w3 with group 128 (the 576-wide
// linears fall back to g64) and w2 with group 64. Each quantized model is compared with the
// unquantized one (fsq eval --compare) on TinyStories and WikiText-2; AWQ's mean KL must be
// below RTN's by a margin on both texts, and no KL may regress past the recorded value.
// A reduced setting keeps it inside CI's budget: calibration 8 x 256 tokens from the tails of
// both texts, evaluation on the first 2 windows of 1024 tokens of each (protocol gptq). At 4
// and 3 bits the scale search's block forwards (most of AWQ's time) see 4 of the 8 windows
// (--search-tokens 1024); at 2 bits they see all 8, because 4 gave a TinyStories KL of 7.39
// where all 8 give 4.15 (2026-12-02), while at 4 and 3 bits the KL rose by 5-8 %.
// One thread: the recorded values were made so, and on 2 cores it was faster than two.
// Each quantize run also checks its memory plan against its measured peak RSS.
// Skipped (failed under CI) when SmolLM2 has not been fetched (scripts/fetch-model.sh smollm2-135m).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "cli_support.h"
#include "fixtures.h"
#include "text_files.h"

namespace fsq::clitest {
namespace {
namespace fs = std::filesystem;

constexpr size_t kCalibBytes = 100'000;       // from the end of each text
constexpr double kAwqOverRtnMaxKlRatio = 0.9;  // AWQ KL <= this x RTN KL, per text and width
constexpr double kRegressionSlack = 1.25;      // recorded value x this fails the test (w4, w3)
// At 2 bits the scale search's choices turn on float rounding, and the error compounds over
// 30 layers: AWQ's TinyStories KL measured 3.83 (11-23), 4.15 (Zen 3, AVX2), 4.96 (Zen 5 with
// FSQ_CPU_ISA=avx2) and 5.28 (Zen 5, AVX-512) at the same code, a spread of 1.38x. So fsq's
// kernel variant moves it, and so does something else per CPU (OPENBLAS_CORETYPE=Haswell did
// not). The bound allows that spread and some more; a broken search lands near RTN's ~10.5
// (which moved < 1 % across the same machines), which both checks catch.
constexpr double kTwoBitRegressionSlack = 1.6;

struct Setting {
  int bits;
  int group;
  int search_tokens;  // AWQ's --search-tokens
};

using testing::tail_of;
using testing::write_file;

class CliQuantizeSmolLM2 : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    if (!fs::exists(testing::smollm2_hf() / "model.safetensors")) return;
    dir_ = make_temp_dir_caller_removes("fsq-cli-quantize-smollm2");
    fs::create_directories(dir_ / "calib");
    write_file(dir_ / "calib" / "tinystories.txt", tail_of(tinystories_val(), kCalibBytes));
    write_file(dir_ / "calib" / "wikitext.txt", tail_of(wikitext_test(), kCalibBytes));
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  static fs::path quantize(const std::string& method, const Setting& s) {
    const fs::path out = dir_ / (method + std::to_string(s.bits) + "g" + std::to_string(s.group));
    const fs::path json = out.string() + ".quantize.json";
    std::vector<std::string> args = {"quantize", "--model", testing::smollm2_hf().string(), "--method", method,
                                     "--bits", std::to_string(s.bits), "--group-size", std::to_string(s.group),
                                     "--out", out.string(), "--threads", "1", "--progress", "off",
                                     "--json", json.string()};
    if (method == "awq")
      args.insert(args.end(), {"--calib-data", (dir_ / "calib").string(), "--samples", "8", "--seq-len", "256",
                                "--search-tokens", std::to_string(s.search_tokens)});
    RunResult r = run_fsq(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (r.exit_code == 0) expect_plan_brackets_peak_rss(json);
    return out;
  }

  static double kl(const fs::path& model, const fs::path& text) {
    return smollm2_kl(model, text, model.string() + "." + text.stem().string() + ".json");
  }

  static fs::path dir_;
};
fs::path CliQuantizeSmolLM2::dir_;

struct Recorded {
  double rtn_tinystories, rtn_wikitext, awq_tinystories, awq_wikitext;  // mean KL
};

// RTN and AWQ at one setting, both texts.
void expect_awq_beats_rtn(const Setting& s, const Recorded& recorded) {
  const fs::path rtn = CliQuantizeSmolLM2::quantize("rtn", s), awq = CliQuantizeSmolLM2::quantize("awq", s);
  for (const bool tiny : {true, false}) {
    const fs::path text = tiny ? tinystories_val() : wikitext_test();
    const double kl_rtn = CliQuantizeSmolLM2::kl(rtn, text), kl_awq = CliQuantizeSmolLM2::kl(awq, text);
    std::printf("w%d g%d %s: KL rtn %.4f awq %.4f\n", s.bits, s.group, text.filename().c_str(), kl_rtn, kl_awq);
    EXPECT_LE(kl_awq, kAwqOverRtnMaxKlRatio * kl_rtn) << "w" << s.bits << " " << text.filename();
    EXPECT_LE(kl_rtn, kRegressionSlack * (tiny ? recorded.rtn_tinystories : recorded.rtn_wikitext));
    const double awq_slack = s.bits == 2 ? kTwoBitRegressionSlack : kRegressionSlack;
    EXPECT_LE(kl_awq, awq_slack * (tiny ? recorded.awq_tinystories : recorded.awq_wikitext));
  }
}

// Recorded with this file's settings (mean KL(reference || quantized)): w4 and w3 on
// 2026-12-02 (AMD Zen 3, AVX2), w2 on 2026-11-23 (all 8 windows then as now; 4.15 on
// TinyStories on 2026-12-02).
TEST_F(CliQuantizeSmolLM2, AwqBeatsRtnAt4BitsGroup128) {
  FSQ_REQUIRE_SMOLLM2_HF();
  expect_awq_beats_rtn({4, 128, 1024}, {0.2646, 0.3708, 0.0983, 0.1715});
}

TEST_F(CliQuantizeSmolLM2, AwqBeatsRtnAt3BitsGroup128) {
  FSQ_REQUIRE_SMOLLM2_HF();
  expect_awq_beats_rtn({3, 128, 1024}, {1.1789, 1.4301, 0.5140, 0.7848});
}

TEST_F(CliQuantizeSmolLM2, AwqBeatsRtnAt2BitsGroup64) {
  FSQ_REQUIRE_SMOLLM2_HF();
  expect_awq_beats_rtn({2, 64, 2048}, {10.5374, 10.8250, 3.8269, 4.9484});
}

}  // namespace
}  // namespace fsq::clitest
