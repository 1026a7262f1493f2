// SmoothQuant W8A8 on the real-model fixture SmolLM2-135M: per-token int8 activations and
// per-channel int8 weights, with smoothing at alpha 0.5, against naive W8A8, in mean KL
// against the unquantized model. Reduced to fit CI: 8 x 256 calibration tokens (the tail
// of TinyStories), evaluation on the first 2 windows of 1024 tokens of TinyStories (protocol
// gptq), one thread. The full table (16 windows of 2048, both protocols) is in the
// SmoothQuant issue's note (scripts/quant-table.sh). Skipped (failed under CI) when SmolLM2
// has not been fetched (scripts/fetch-model.sh smollm2-135m).
#include <gtest/gtest.h>

#include "cli_support.h"
#include "fixtures.h"
#include "text_files.h"

namespace fsq::clitest {
namespace {
namespace fs = std::filesystem;

constexpr size_t kSmoothCalibBytes = 100'000;  // from the end of TinyStories
// The target for SmoothQuant W8A8: mean KL <= 0.01 against fp32.
constexpr double kMaxSmoothQuantKl = 0.01;
constexpr double kSmoothSlack = 1.25;  // recorded value x this fails the test
// Recorded 2026-11-25 with this file's settings (mean KL(reference || quantized)).
constexpr double kRecordedNaive = 0.02232, kRecordedSmoothQuant = 0.00662;

class CliQuantizeSmolLM2SmoothQuant : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    if (!fs::exists(testing::smollm2_hf() / "model.safetensors")) return;
    dir_ = make_temp_dir_caller_removes("fsq-cli-smollm2-smoothquant");
    testing::write_file(dir_ / "calib.txt", testing::tail_of(tinystories_val(), kSmoothCalibBytes));
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Quantizes with `options` (calibrated on dir_/calib.txt) and returns the mean KL.
  static double kl(const std::string& name, std::vector<std::string> options) {
    options.insert(options.end(), {"--calib-data", (dir_ / "calib.txt").string(), "--samples", "8", "--seq-len", "256"});
    return smollm2_quantized_kl(dir_, name, options);
  }

  static fs::path dir_;
};
fs::path CliQuantizeSmolLM2SmoothQuant::dir_;

TEST_F(CliQuantizeSmolLM2SmoothQuant, SmoothingBeatsNaiveW8A8AndMeetsTheTarget) {
  FSQ_REQUIRE_SMOLLM2_HF();
  const double naive = kl("w8a8", {"--method", "w8a8"});
  const double smooth = kl("smoothquant", {"--method", "smoothquant", "--alpha", "0.5"});
  std::printf("SmolLM2 W8A8 per-token KL: naive %.5f, SmoothQuant alpha 0.5 %.5f\n", naive, smooth);
  EXPECT_LT(smooth, naive);
  EXPECT_LE(smooth, kMaxSmoothQuantKl);
  EXPECT_LE(naive, kSmoothSlack * kRecordedNaive);
  EXPECT_LE(smooth, kSmoothSlack * kRecordedSmoothQuant);
}

}  // namespace
}  // namespace fsq::clitest
