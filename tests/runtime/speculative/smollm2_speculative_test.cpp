// Speculative decoding on SmolLM2-135M (the check): 256 new tokens from each of 5
// prompts, the f32 model verifying. Draft mode with a 4-bit RTN draft and BiLD (the same
// 4-bit model as the small one, rollback threshold 0) must both give the f32 model's plain
// greedy output token for token. Skipped (failed under CI) without the cached model.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "fixtures.h"
#include "formats/tokenizer.h"
#include "runtime/generate.h"
#include "runtime/model_files.h"
#include "runtime/speculative/draft_model_proposer.h"
#include "runtime/speculative/speculative_decode.h"
#include "runtime/threads.h"
#include "speculative_fixture.h"
#include "temp_dir.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;
using speculative::DraftModelProposer;
using speculative::DraftOptions;
using speculative::SpeculativeOptions;
using speculative::SpeculativeStats;

constexpr int64_t kSmolNewTokens = 256;
// Below this the 4-bit draft would be of no use (measured: about 0.7 at gamma 4).
constexpr double kMinW4Acceptance = 0.4;

const char* const kPrompts[] = {"Once upon a time", "The capital of France is", "def fibonacci(n):",
                                "In 1905, Albert Einstein", "The best way to learn a language is"};

class SmolLM2Speculative : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(testing::smollm2_hf() / "model.safetensors")) return;
    set_threads(1);  // exactness, not speed: one thread keeps it steady on a busy machine
    dir_ = new testing::TempDir("fsq-spec-smollm2");
    test::quantize_rtn(testing::smollm2_hf(), dir_->path() / "w4", 4);
    target_files_ = new ModelFiles(ModelFiles::open(testing::smollm2_hf()));
    draft_files_ = new ModelFiles(ModelFiles::open(dir_->path() / "w4"));
    target_ = target_files_->load(RuntimeOptions{}).release();
    draft_ = draft_files_->load(RuntimeOptions{}).release();
    tokenizer_ = load_tokenizer(testing::smollm2_hf()).release();
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    delete draft_;
    delete target_;
    delete draft_files_;
    delete target_files_;
    delete dir_;
  }
  void SetUp() override { FSQ_REQUIRE_SMOLLM2_HF(); }

  static inline testing::TempDir* dir_ = nullptr;
  static inline ModelFiles *target_files_ = nullptr, *draft_files_ = nullptr;
  static inline LlamaModel *target_ = nullptr, *draft_ = nullptr;
  static inline Tokenizer* tokenizer_ = nullptr;
};

TEST_F(SmolLM2Speculative, DraftAndBildGiveTheF32ModelsGreedyOutput) {
  int64_t proposed = 0, accepted = 0;
  for (const char* text : kPrompts) {
    SCOPED_TRACE(text);
    const std::vector<int32_t> prompt = tokenizer_->encode_default(text);
    const int64_t capacity = static_cast<int64_t>(prompt.size()) + kSmolNewTokens;
    GenerateOptions go;
    go.max_new_tokens = kSmolNewTokens;
    const std::vector<int32_t> plain = generate_greedy(*target_, prompt, go);
    ASSERT_EQ(static_cast<int64_t>(plain.size()), capacity);
    SpeculativeOptions so;
    so.max_new_tokens = kSmolNewTokens;
    so.gamma = 4;
    SpeculativeStats draft_stats, bild_stats;
    DraftModelProposer draft(*draft_, capacity);
    EXPECT_EQ(speculative::generate_speculative(*target_, draft, prompt, so, &draft_stats), plain) << "draft mode";
    EXPECT_EQ(draft_stats.verify_path, "fast decode rows");
    so.gamma = 7;  // BiLD's window cap
    DraftModelProposer bild(*draft_, capacity, DraftOptions{0.5, "bild"});
    EXPECT_EQ(speculative::generate_speculative(*target_, bild, prompt, so, &bild_stats), plain) << "BiLD";
    proposed += draft_stats.proposed;
    accepted += draft_stats.accepted;
  }
  EXPECT_GE(static_cast<double>(accepted) / static_cast<double>(proposed), kMinW4Acceptance);
}

}  // namespace
}  // namespace fsq
