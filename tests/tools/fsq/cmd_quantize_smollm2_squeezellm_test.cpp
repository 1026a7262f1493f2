// SqueezeLLM's ingredients on the real-model fixture SmolLM2-135M at 3 bits, in the paper's
// order: Fisher weighting + the 0.45 % sparse part < Fisher dense-only < unweighted k-means <
// RTN per channel (the uniform type with the same per-row budget), in mean KL against the
// unquantized model. Per channel is the paper's RTN: its Figure 1 (LLaMA-7B, 3 bits, C4
// perplexity) steps from RTN 28.26 to non-uniform 18.08 to sensitivity-based 7.75 to 7.56 with
// the sparse part. Grouped RTN spends more bits and is not in that chain: here RTN g128 (3.33
// b/w) beats unweighted k-means (3.19 b/w), KL 1.22 against 3.06. Reduced to fit CI: Fisher
// diagonals from 8 x 256 calibration tokens (the tails of TinyStories and WikiText-2),
// evaluation on the first 2 windows of 1024 tokens of TinyStories (protocol gptq), one thread.
// Skipped (failed under CI) when SmolLM2 has not been fetched (scripts/fetch-model.sh
// smollm2-135m).
#include <gtest/gtest.h>

#include "cli_support.h"
#include "fixtures.h"
#include "text_files.h"

namespace fsq::clitest {
namespace {
namespace fs = std::filesystem;

constexpr size_t kOrderingCalibBytes = 100'000;  // from the end of each text
// Each step of the order must lower the KL at least this much (measured 2026-11-25:
// sparse/dense 0.58, dense/unweighted 0.23, unweighted/RTN 0.93).
constexpr double kSparseOverDense = 0.8, kDenseOverUnweighted = 0.5, kUnweightedOverRtn = 0.97;
constexpr double kOrderingSlack = 1.25;  // recorded value x this fails the test
// Recorded 2026-11-25 with this file's settings (mean KL(reference || quantized)).
constexpr double kRecordedRtn = 3.3020, kRecordedUnweighted = 3.0791, kRecordedDense = 0.7125,
                 kRecordedSparse = 0.4157;

class CliQuantizeSmolLM2SqueezeLlm : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    if (!fs::exists(testing::smollm2_hf() / "model.safetensors")) return;
    dir_ = make_temp_dir_caller_removes("fsq-cli-smollm2-squeezellm");
    fs::create_directories(dir_ / "calib");
    testing::write_file(dir_ / "calib" / "tinystories.txt", testing::tail_of(tinystories_val(), kOrderingCalibBytes));
    testing::write_file(dir_ / "calib" / "wikitext.txt", testing::tail_of(wikitext_test(), kOrderingCalibBytes));
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  static fs::path fisher_file() {
    const fs::path out = dir_ / "fisher.safetensors";
    if (fs::exists(out)) return out;
    RunResult r = run_fsq({"calibrate", "--model", testing::smollm2_hf().string(), "--data", (dir_ / "calib").string(),
                           "--fisher", "--samples", "8", "--seq-len", "256", "--out", out.string(), "--threads", "1",
                           "--progress", "off"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return out;
  }

  static double kl(const std::string& name, const std::vector<std::string>& options) {
    return smollm2_quantized_kl(dir_, name, options);
  }

  static fs::path dir_;
};
fs::path CliQuantizeSmolLM2SqueezeLlm::dir_;

TEST_F(CliQuantizeSmolLM2SqueezeLlm, PaperOrderingHoldsAtThreeBits) {
  FSQ_REQUIRE_SMOLLM2_HF();
  const std::string fisher = fisher_file().string();
  const double rtn = kl("rtn3pc", {"--method", "rtn", "--bits", "3", "--group-size", "0"});
  const double unweighted = kl("sq3-unweighted", {"--method", "squeezellm", "--bits", "3", "--unweighted", "--dense-only"});
  const double dense = kl("sq3-dense", {"--method", "squeezellm", "--bits", "3", "--calib", fisher, "--dense-only"});
  const double sparse = kl("sq3", {"--method", "squeezellm", "--bits", "3", "--calib", fisher});
  std::printf("SmolLM2 3-bit KL: rtn per-channel %.4f, unweighted %.4f, Fisher dense %.4f, Fisher + sparse %.4f\n", rtn,
              unweighted, dense, sparse);
  EXPECT_LE(sparse, kSparseOverDense * dense);
  EXPECT_LE(dense, kDenseOverUnweighted * unweighted);
  EXPECT_LE(unweighted, kUnweightedOverRtn * rtn);
  EXPECT_LE(rtn, kOrderingSlack * kRecordedRtn);
  EXPECT_LE(unweighted, kOrderingSlack * kRecordedUnweighted);
  EXPECT_LE(dense, kOrderingSlack * kRecordedDense);
  EXPECT_LE(sparse, kOrderingSlack * kRecordedSparse);
}

}  // namespace
}  // namespace fsq::clitest
