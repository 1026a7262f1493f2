// KL divergence and top-1 agreement against direct double-precision computations.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/eval/compare.h"
#include "runtime/eval/perplexity.h"

namespace fsq {
namespace {

// sum_v p_ref (log p_ref - log p_model) with plain loops in double.
double direct_kl(const at::Tensor& model_row, const at::Tensor& ref_row) {
  at::Tensor m = model_row.to(at::kDouble).contiguous(), r = ref_row.to(at::kDouble).contiguous();
  const double* a = m.data_ptr<double>();
  const double* b = r.data_ptr<double>();
  const int64_t V = m.numel();
  auto lse = [V](const double* x) {
    double mx = x[0];
    for (int64_t i = 1; i < V; ++i) mx = std::max(mx, x[i]);
    double z = 0.0;
    for (int64_t i = 0; i < V; ++i) z += std::exp(x[i] - mx);
    return mx + std::log(z);
  };
  const double la = lse(a), lb = lse(b);
  double kl = 0.0;
  for (int64_t i = 0; i < V; ++i) {
    double lr = b[i] - lb, lm = a[i] - la;
    kl += std::exp(lr) * (lr - lm);
  }
  return kl;
}

TEST(Compare, IdenticalLogitsGiveZeroKlAndFullAgreement) {
  at::manual_seed(7);
  at::Tensor rows = at::randn({50, 311}) * 4.0;
  CompareStats s;
  add_compare(rows, rows.clone(), s);
  EXPECT_EQ(s.tokens(), 50);
  for (double k : s.kl) EXPECT_EQ(k, 0.0);
  EXPECT_EQ(s.mean_kl(), 0.0);
  EXPECT_EQ(s.top1_agreement(), 1.0);
  EXPECT_EQ(percentile(s.kl, 99.0), 0.0);
}

TEST(Compare, KlMatchesDirectDoubleComputation) {
  at::manual_seed(11);
  at::Tensor ref = at::randn({40, 97}) * 3.0;
  at::Tensor model = ref + at::randn({40, 97}) * 0.5;
  std::vector<double> kl = kl_per_row(model, ref);
  ASSERT_EQ(kl.size(), 40u);
  for (int64_t i = 0; i < 40; ++i) {
    double want = direct_kl(model[i], ref[i]);
    EXPECT_NEAR(kl[static_cast<size_t>(i)], want, 1e-12 * std::max(1.0, want)) << "row " << i;
    EXPECT_GT(want, 0.0);
  }
}

TEST(Compare, KnownTwoPointDistributions) {
  // ref p = (1/2, 1/2), model q = (3/4, 1/4): KL = 1/2 ln(2/3) + 1/2 ln 2.
  at::Tensor ref = at::zeros({1, 2});
  at::Tensor model = at::tensor({float(std::log(3.0)), 0.0f}).reshape({1, 2});
  std::vector<double> kl = kl_per_row(model, ref);
  EXPECT_NEAR(kl[0], 0.5 * std::log(2.0 / 3.0) + 0.5 * std::log(2.0), 1e-7);
}

TEST(Compare, AgreementCountsEqualArgmax) {
  at::Tensor ref = at::tensor({5.f, 1.f, 0.f, 0.f, 5.f, 1.f, 1.f, 0.f, 5.f}).reshape({3, 3});
  at::Tensor model = at::tensor({4.f, 1.f, 0.f, 5.f, 0.f, 1.f, 1.f, 0.f, 9.f}).reshape({3, 3});
  CompareStats s;
  add_compare(model, ref, s);
  EXPECT_EQ(s.agree, 2);
  EXPECT_NEAR(s.top1_agreement(), 2.0 / 3.0, 1e-15);
}

TEST(Compare, LargeVocabularyIsChunkedCorrectly) {
  at::manual_seed(3);
  at::Tensor ref = at::randn({70, 50000});
  at::Tensor model = ref * 1.1 + 0.01;
  std::vector<double> kl = kl_per_row(model, ref);
  for (int64_t i : {0, 33, 69}) EXPECT_NEAR(kl[size_t(i)], direct_kl(model[i], ref[i]), 1e-12);
}

TEST(Compare, PercentileInterpolatesLikeNumpy) {
  std::vector<double> v = {5, 1, 4, 2, 3};  // sorted 1..5
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1.0);
  EXPECT_DOUBLE_EQ(percentile(v, 50), 3.0);
  EXPECT_DOUBLE_EQ(percentile(v, 100), 5.0);
  EXPECT_DOUBLE_EQ(percentile(v, 99), 4.96);  // numpy.percentile([1..5], 99)
  EXPECT_DOUBLE_EQ(percentile({}, 99), 0.0);
}

TEST(Compare, RunEvalWithReferenceAggregatesPerToken) {
  const int64_t V = 29;
  std::vector<int32_t> text(120);
  for (size_t i = 0; i < text.size(); ++i) text[i] = static_cast<int32_t>(2 + (i * 5) % (V - 2));
  WindowOptions o;
  o.protocol = Protocol::BosWindow;
  o.seq_len = 12;
  o.bos_id = 1;
  WindowPlan plan = make_windows(text, o);
  auto ref_fn = [V](const at::Tensor& ids) {
    return at::sin(ids.to(at::kFloat).unsqueeze(-1) * 0.7f + at::arange(V, at::kFloat) * 0.3f) * 2.0f;
  };
  auto model_fn = [&](const at::Tensor& ids) { return ref_fn(ids) * 1.25f + 0.1f; };
  LogitsFn ref = ref_fn, model = model_fn;
  EvalRunOptions ro;
  ro.batch_size = 4;
  ro.progress = ProgressMode::Off;
  EvalResult r = run_eval(model, &ref, plan, ro);
  ASSERT_TRUE(r.compare && r.ref);
  EXPECT_EQ(r.compare->tokens(), plan.scored_tokens());
  // Direct: mean over every scored position of every window.
  double total = 0.0;
  int64_t n = 0;
  for (const auto& w : plan.windows) {
    at::Tensor ids = at::tensor(std::vector<int64_t>(w.ids.begin(), w.ids.end()), at::kLong).unsqueeze(0);
    at::Tensor a = model_fn(ids)[0], b = ref_fn(ids)[0];
    for (int64_t p = w.score_begin; p < w.score_end; ++p, ++n) total += direct_kl(a[p], b[p]);
  }
  EXPECT_NEAR(r.compare->mean_kl(), total / double(n), 1e-12);
  // Scaling logits by 1.25 keeps every argmax.
  EXPECT_EQ(r.compare->top1_agreement(), 1.0);
  EXPECT_NE(r.model.nll_sum, r.ref->nll_sum);
}

}  // namespace
}  // namespace fsq
