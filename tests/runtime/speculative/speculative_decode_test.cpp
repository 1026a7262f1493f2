// The speculative loop (runtime/speculative/speculative_decode.h) on tiny random models: with
// greedy acceptance its output equals plain greedy generation token for token, whatever the
// draft proposes (itself, an 8-bit copy, an unrelated model), the draft length and the
// fallback threshold; the statistics add up; bad options fail in one line.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/error.h"
#include "runtime/generate.h"
#include "runtime/model.h"
#include "runtime/model_files.h"
#include "runtime/speculative/draft_model_proposer.h"
#include "runtime/speculative/speculative_decode.h"
#include "speculative_fixture.h"
#include "temp_dir.h"

namespace fsq {
namespace {

using speculative::DraftModelProposer;
using speculative::DraftOptions;
using speculative::SpeculativeOptions;
using speculative::SpeculativeStats;

constexpr int64_t kLoopNewTokens = 60;

// A verifier (seed 1, f32), its 8-bit RTN copy and an unrelated model (seed 2), one vocabulary.
class Speculative : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir("fsq-spec-loop");
    testing::write_tiny_model(dir_->path() / "target", test::speculative_spec(1));
    testing::write_tiny_model(dir_->path() / "other", test::speculative_spec(2));
    test::quantize_rtn(dir_->path() / "target", dir_->path() / "w8", 8);
    for (const char* name : {"target", "other", "w8"}) {
      files_[name] = new ModelFiles(ModelFiles::open(dir_->path() / name));
      models_[name] = files_[name]->load(RuntimeOptions{}).release();
    }
  }
  static void TearDownTestSuite() {
    for (auto& [name, m] : models_) delete m;
    for (auto& [name, f] : files_) delete f;
    models_.clear();
    files_.clear();
    delete dir_;
  }
  static const LlamaModel& model(const std::string& name) { return *models_.at(name); }
  static std::vector<std::vector<int32_t>> prompts() { return {{1}, {5, 17, 3}, {90, 2, 44, 8, 61, 23, 7}}; }
  static std::vector<int32_t> greedy(const std::vector<int32_t>& prompt, int64_t stop = -1) {
    GenerateOptions go;
    go.max_new_tokens = kLoopNewTokens;
    go.stop_token = stop;
    return generate_greedy(model("target"), prompt, go);
  }
  static std::vector<int32_t> speculate(const std::string& draft, const std::vector<int32_t>& prompt, int64_t gamma,
                                        SpeculativeStats* stats = nullptr, DraftOptions d = {}, double alpha_rb = 0.0,
                                        int64_t stop = -1) {
    SpeculativeOptions so;
    so.max_new_tokens = kLoopNewTokens;
    so.gamma = gamma;
    so.alpha_rb = alpha_rb;
    so.stop_token = stop;
    DraftModelProposer proposer(model(draft), static_cast<int64_t>(prompt.size()) + kLoopNewTokens, d);
    return speculative::generate_speculative(model("target"), proposer, prompt, so, stats);
  }
  static testing::TempDir* dir_;
  static std::map<std::string, ModelFiles*> files_;
  static std::map<std::string, LlamaModel*> models_;
};
testing::TempDir* Speculative::dir_ = nullptr;
std::map<std::string, ModelFiles*> Speculative::files_;
std::map<std::string, LlamaModel*> Speculative::models_;

TEST_F(Speculative, EveryDraftAndLengthGivesTheVerifiersGreedyOutput) {
  for (const char* draft : {"target", "w8", "other"})
    for (int64_t gamma : {1, 2, 4, 7})
      for (const auto& prompt : prompts()) {
        SCOPED_TRACE(std::string(draft) + " gamma " + std::to_string(gamma) + " prompt " + std::to_string(prompt.size()));
        SpeculativeStats stats;
        EXPECT_EQ(speculate(draft, prompt, gamma, &stats), greedy(prompt));
        EXPECT_EQ(stats.verify_path, "fast decode rows");
        EXPECT_EQ(stats.generated, kLoopNewTokens);
        EXPECT_LE(stats.accepted, stats.proposed);
        // Every pass emits its accepted drafts and one token of the verifier's.
        EXPECT_EQ(stats.generated - 1, stats.accepted + stats.verify_steps);
      }
}

TEST_F(Speculative, TheVerifierAsItsOwnDraftAcceptsEverything) {
  SpeculativeStats stats;
  speculate("target", {5, 17, 3}, 4, &stats);
  EXPECT_EQ(stats.accepted, stats.proposed);
  EXPECT_DOUBLE_EQ(stats.acceptance_rate(), 1.0);
  // 59 tokens after the prefill's: 11 passes of 4 drafts + 1, then 4 tokens (3 drafts + 1).
  EXPECT_EQ(stats.verify_steps, 12);
}

TEST_F(Speculative, AQuantizedDraftAgreesMoreThanAnUnrelatedOne) {
  SpeculativeStats w8, other;
  speculate("w8", {5, 17, 3}, 4, &w8);
  speculate("other", {5, 17, 3}, 4, &other);
  EXPECT_GT(w8.acceptance_rate(), other.acceptance_rate());
  EXPECT_GT(w8.acceptance_rate(), 0.5);
}

TEST_F(Speculative, BildWithZeroRollbackIsTheVerifiersGreedyOutput) {
  for (double alpha_fb : {0.2, 0.5, 0.9}) {
    SpeculativeStats stats;
    DraftOptions d{alpha_fb, "bild"};
    EXPECT_EQ(speculate("w8", {5, 17, 3}, 7, &stats, d, 0.0), greedy({5, 17, 3})) << alpha_fb;
    // A higher fallback threshold proposes fewer tokens per pass.
    EXPECT_LE(stats.proposed, 7 * stats.verify_steps);
  }
  SpeculativeStats low, high;
  speculate("w8", {5, 17, 3}, 7, &low, DraftOptions{0.1, "bild"});
  speculate("w8", {5, 17, 3}, 7, &high, DraftOptions{0.95, "bild"});
  EXPECT_LT(high.proposed, low.proposed);
}

TEST_F(Speculative, ALooseRollbackThresholdKeepsDraftTokensTheVerifierWouldNotPick) {
  SpeculativeStats stats;
  const std::vector<int32_t> out = speculate("other", {5, 17, 3}, 4, &stats, {}, 1e9);
  EXPECT_EQ(stats.accepted, stats.proposed);
  EXPECT_NE(out, greedy({5, 17, 3}));
}

TEST_F(Speculative, StopsAtTheStopTokenAsGreedyDoes) {
  const std::vector<int32_t> plain = greedy({5, 17, 3});
  const int32_t stop = plain[3 + 10];  // the 11th new token
  const std::vector<int32_t> expected = greedy({5, 17, 3}, stop);
  ASSERT_LE(expected.size(), 3u + 11u);
  for (int64_t gamma : {1, 4, 7}) EXPECT_EQ(speculate("w8", {5, 17, 3}, gamma, nullptr, {}, 0.0, stop), expected);
}

TEST_F(Speculative, BadOptionsFailInOneLine) {
  for (int64_t gamma : {0, 8})
    try {
      speculate("w8", {5}, gamma);
      ADD_FAILURE() << "gamma " << gamma << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--gamma"), std::string::npos) << e.what();
    }
  EXPECT_THROW(speculate("w8", {5}, 4, nullptr, {}, -1.0), Error);
  EXPECT_THROW(speculate("w8", {5}, 4, nullptr, DraftOptions{1.5, "bild"}), Error);
  EXPECT_THROW(speculate("w8", {}, 4), Error);
}

// The score (the verifier's -log p of each emitted token, from the verify rows) against the
// same sum over one full forward of the output on the ATen layers.
TEST_F(Speculative, ScoreIsTheVerifiersNegativeLogLikelihoodOfTheText) {
  constexpr double kNllRelative = 1e-4;  // fast rows vs the ATen GEMM: ~1e-6 per logit
  SpeculativeOptions so;
  so.max_new_tokens = kLoopNewTokens;
  so.gamma = 4;
  so.alpha_rb = 3.0;  // keep some tokens the verifier would not pick, so their p matters
  so.score = true;
  const std::vector<int32_t> prompt = {5, 17, 3};
  DraftModelProposer proposer(model("other"), static_cast<int64_t>(prompt.size()) + kLoopNewTokens);
  SpeculativeStats stats;
  const std::vector<int32_t> out = speculative::generate_speculative(model("target"), proposer, prompt, so, &stats);
  const std::vector<int64_t> ids64(out.begin(), out.end());
  const at::Tensor logits = model("target").forward(at::tensor(ids64, at::kLong).view({1, -1}))[0];
  const at::Tensor logp = at::log_softmax(logits.to(at::kDouble), -1);
  double nll = 0.0;
  for (size_t i = prompt.size(); i < out.size(); ++i) nll -= logp[static_cast<int64_t>(i) - 1][out[i]].item<double>();
  EXPECT_NEAR(stats.nll, nll, kNllRelative * nll);
  EXPECT_NEAR(stats.perplexity(), std::exp(nll / kLoopNewTokens), 1e-3);
  EXPECT_GT(stats.accepted, 0);
}

// Off the fast path the verify pass runs on the ATen layers and says why.
TEST_F(Speculative, WithoutTheFastPathTheVerifyPassSaysWhy) {
  RuntimeOptions off;
  off.fast_decode = false;
  const auto slow = files_.at("target")->load(off);  // the f32 verifier off the fast path
  SpeculativeOptions so;
  so.max_new_tokens = 12;
  DraftModelProposer proposer(model("w8"), 15, {});
  SpeculativeStats stats;
  const auto out = speculative::generate_speculative(*slow, proposer, {5, 17, 3}, so, &stats);
  EXPECT_EQ(out.size(), 15u);
  EXPECT_NE(stats.verify_path.find("ATen layers (turned off"), std::string::npos) << stats.verify_path;
}

}  // namespace
}  // namespace fsq
