// Perplexity on synthetic logits against hand / direct double-precision computations.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "common/error.h"
#include "runtime/eval/perplexity.h"

namespace fsq {
namespace {

constexpr double kTight = 1e-9;  // double accumulation of fp32 log-softmax values

TEST(Perplexity, UniformLogitsGivePerplexityEqualToVocab) {
  const int64_t V = 37;
  at::Tensor rows = at::zeros({5, V});
  at::Tensor targets = at::tensor({0, 3, 36, 7, 1}, at::kLong);
  NllStats s;
  add_nll(rows, targets, s);
  EXPECT_EQ(s.tokens, 5);
  EXPECT_NEAR(s.mean_nll(), std::log(double(V)), 1e-6);
  EXPECT_NEAR(s.ppl(), double(V), 1e-4);
}

TEST(Perplexity, HandComputedTwoTokens) {
  // Row 0: logits [0, ln 3] -> p(target 1) = 3/4. Row 1: [ln 2, 0, 0] -> p(target 0) = 1/2.
  at::Tensor rows = at::tensor({0.0f, float(std::log(3.0)), 0.0f, float(std::log(2.0)), 0.0f, 0.0f})
                        .reshape({2, 3});
  // Pad row 0 with a -inf-like logit so both rows have 3 entries: p = 3/4 stays exact.
  rows[0][2] = -1e30f;
  at::Tensor targets = at::tensor({1, 0}, at::kLong);
  NllStats s;
  add_nll(rows, targets, s);
  const double expect = -(std::log(0.75) + std::log(0.5));
  EXPECT_NEAR(s.nll_sum, expect, 1e-6);
  EXPECT_NEAR(s.ppl(), std::exp(expect / 2), 1e-6);
}

// Logits that depend on the input token and position, like a model's would.
at::Tensor synthetic_logits(const at::Tensor& ids, int64_t V) {
  at::Tensor base = at::arange(V, at::kFloat).reshape({1, 1, V});
  at::Tensor x = ids.to(at::kFloat).unsqueeze(-1);
  at::Tensor pos = at::arange(ids.size(1), at::kFloat).reshape({1, -1, 1});
  return at::sin(base * 0.37f + x * 1.3f) * 3.0f + at::cos(pos * 0.11f + base * 0.05f);
}

// Direct double-precision NLL over all scored positions, one window at a time.
double direct_nll(const WindowPlan& plan, int64_t V, int64_t* count) {
  double total = 0.0;
  *count = 0;
  for (const auto& w : plan.windows) {
    at::Tensor ids = at::tensor(std::vector<int64_t>(w.ids.begin(), w.ids.end()), at::kLong).unsqueeze(0);
    at::Tensor lg = synthetic_logits(ids, V)[0].to(at::kDouble).contiguous();
    auto a = lg.accessor<double, 2>();
    for (int64_t p = w.score_begin; p < w.score_end; ++p) {
      double mx = -1e300;
      for (int64_t v = 0; v < V; ++v) mx = std::max(mx, a[p][v]);
      double z = 0.0;
      for (int64_t v = 0; v < V; ++v) z += std::exp(a[p][v] - mx);
      total -= a[p][w.ids[static_cast<size_t>(p + 1)]] - mx - std::log(z);
      ++*count;
    }
  }
  return total;
}

WindowPlan plan_for(Protocol proto, int64_t L, size_t n_tokens, int64_t V) {
  std::vector<int32_t> text(n_tokens);
  for (size_t i = 0; i < n_tokens; ++i) text[i] = static_cast<int32_t>(2 + (i * 7 + i / 5) % (V - 2));
  WindowOptions o;
  o.protocol = proto;
  o.seq_len = L;
  o.bos_id = 1;
  o.add_bos = true;
  return make_windows(text, o);
}

TEST(Perplexity, RunEvalMatchesDirectComputationForAnyBatchSize) {
  const int64_t V = 23;
  for (Protocol proto : {Protocol::Gptq, Protocol::LlamaCpp, Protocol::BosWindow}) {
    WindowPlan plan = plan_for(proto, 16, 150, V);
    int64_t count = 0;
    const double want = direct_nll(plan, V, &count);
    LogitsFn fn = [V](const at::Tensor& ids) { return synthetic_logits(ids, V); };
    for (int64_t b : {1, 3, 8, 100}) {
      EvalRunOptions ro;
      ro.batch_size = b;
      ro.progress = ProgressMode::Off;
      EvalResult r = run_eval(fn, nullptr, plan, ro);
      SCOPED_TRACE(protocol_name(proto) + " batch " + std::to_string(b));
      EXPECT_EQ(r.windows, static_cast<int64_t>(plan.windows.size()));
      EXPECT_EQ(r.model.tokens, count);
      EXPECT_EQ(r.model.tokens, plan.scored_tokens());
      EXPECT_NEAR(r.model.nll_sum / count, want / count, 1e-6);
      EXPECT_FALSE(r.compare.has_value());
    }
  }
}

TEST(Perplexity, BatchSizeDoesNotChangeTheSum) {
  const int64_t V = 19;
  WindowPlan plan = plan_for(Protocol::Gptq, 8, 200, V);
  LogitsFn fn = [V](const at::Tensor& ids) { return synthetic_logits(ids, V); };
  EvalRunOptions ro;
  ro.progress = ProgressMode::Off;
  ro.batch_size = 1;
  double one = run_eval(fn, nullptr, plan, ro).model.nll_sum;
  ro.batch_size = 7;
  double seven = run_eval(fn, nullptr, plan, ro).model.nll_sum;
  EXPECT_NEAR(one, seven, kTight * std::abs(one));
}

// The last progress line reads 100 % with every window counted (it once stopped at 7/8).
TEST(Perplexity, ProgressEndsAtAllWindows) {
  const int64_t V = 11;
  WindowPlan plan = plan_for(Protocol::Gptq, 8, 8 * 8 + 1, V);
  ASSERT_EQ(plan.windows.size(), 8u);
  LogitsFn fn = [V](const at::Tensor& ids) { return synthetic_logits(ids, V); };
  for (int64_t batch : {1, 3}) {
    EvalRunOptions ro;
    ro.progress = ProgressMode::Lines;
    ro.batch_size = batch;
    ::testing::internal::CaptureStderr();
    run_eval(fn, nullptr, plan, ro);
    const std::string err = ::testing::internal::GetCapturedStderr();
    const std::string last = err.substr(err.rfind('\n', err.size() - 2) + 1);
    EXPECT_NE(last.find("100% 8/8"), std::string::npos) << "batch " << batch << ": " << err;
  }
}

// NaN logits in one window fail the run naming that window, unless allowed.
TEST(Perplexity, NonFiniteLogitsFailNamingTheWindow) {
  const int64_t V = 13;
  WindowPlan plan = plan_for(Protocol::Gptq, 8, 8 * 5 + 1, V);
  ASSERT_EQ(plan.windows.size(), 5u);
  int64_t calls = 0;  // batch size 1: call k scores window k
  LogitsFn fn = [V, &calls](const at::Tensor& ids) {
    at::Tensor logits = synthetic_logits(ids, V);
    if (calls++ == 3) logits[0][2][0] = NAN;
    return logits;
  };
  EvalRunOptions ro;
  ro.progress = ProgressMode::Off;
  ro.batch_size = 1;
  try {
    run_eval(fn, nullptr, plan, ro);
    ADD_FAILURE() << "expected fsq::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("window 3:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--allow-nonfinite"), std::string::npos) << e.what();
  }
  EXPECT_EQ(calls, 4) << "the run must stop at the first bad window";
  calls = 0;
  ro.allow_nonfinite = true;
  EXPECT_TRUE(std::isnan(run_eval(fn, nullptr, plan, ro).model.nll_sum));
}

TEST(Perplexity, ScoredRowsPickShiftedTargets) {
  at::Tensor ids = at::tensor({10, 11, 12, 13, 20, 21, 22, 23}, at::kLong).reshape({2, 4});
  at::Tensor logits = at::arange(2 * 4 * 3, at::kFloat).reshape({2, 4, 3});
  Window w{{}, 1, 3};
  ScoredRows s = scored_rows(logits, ids, w);
  EXPECT_EQ(s.rows.sizes(), (at::IntArrayRef{4, 3}));
  EXPECT_TRUE(at::equal(s.targets, at::tensor({12, 13, 22, 23}, at::kLong)));
  EXPECT_TRUE(at::equal(s.rows[0], logits[0][1]));
  EXPECT_TRUE(at::equal(s.rows[3], logits[1][2]));
}

TEST(Perplexity, RejectsBadBatchSizeAndEmptyPlan) {
  LogitsFn fn = [](const at::Tensor& ids) { return synthetic_logits(ids, 5); };
  WindowPlan empty;
  EvalRunOptions ro;
  ro.progress = ProgressMode::Off;
  EXPECT_THROW(run_eval(fn, nullptr, empty, ro), Error);
  ro.batch_size = 0;
  EXPECT_THROW(run_eval(fn, nullptr, plan_for(Protocol::Gptq, 4, 20, 5), ro), Error);
}

TEST(Perplexity, AutoBatchSizeStaysInRange) {
  EXPECT_EQ(auto_batch_size(256, 512, 8, false), 8);
  EXPECT_EQ(auto_batch_size(2048, 128256, 32, true), 1);
  int64_t b = auto_batch_size(2048, 32000, 32, false);
  EXPECT_GE(b, 1);
  EXPECT_LE(b, 8);
}

}  // namespace
}  // namespace fsq
