// GPTQ's codes for SqueezeLLM's lookup tables (quantize/gptq_lut.h) against the nearest
// codes quantize_lut gives: identical when the inputs are uncorrelated, a lower
// reconstruction loss when they are correlated (dense-only and with the sparse part), the
// tables and the sparse positions untouched, dead inputs left at nearest, bit-identical for
// any thread count, and clear errors on bad Hessians.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <limits>
#include <vector>

#include "common/error.h"
#include "correlated_inputs.h"
#include "quantize/gptq_lut.h"
#include "quantize/squeezellm/lut_quantizer.h"

namespace fsq {
namespace {

constexpr int64_t kLutRows = 40, kLutCols = 96, kLutTokens = 1024;
const std::string kWhere = "model.layers.0.mlp.down_proj";

struct Fixture {
  std::vector<float> w, fisher;
};

// Heavy-tailed weights (Student-t-like: a normal over a random scale) and positive Fisher.
Fixture make_fixture(int64_t seed) {
  at::manual_seed(seed);
  const at::Tensor w = at::randn({kLutRows, kLutCols}) / at::sqrt(at::rand({kLutRows, kLutCols}) + 0.05);
  const at::Tensor f = at::rand({kLutRows, kLutCols}) * at::rand({kLutRows, kLutCols});
  auto floats = [](const at::Tensor& t) {
    const at::Tensor c = t.contiguous();
    return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  };
  return {floats(w), floats(f)};
}

LutMatrix nearest(const Fixture& fx, int bits, bool dense_only) {
  squeezellm::LutOptions o;
  o.bits = bits;
  o.dense_only = dense_only;
  o.outlier_pct = 2.0;  // a few sparse values per row of 96
  return squeezellm::quantize_lut(fx.w.data(), fx.fisher.data(), kLutRows, kLutCols, o, nullptr, kWhere);
}

double loss(const LutMatrix& m, const Fixture& fx, const at::Tensor& h) {
  at::Tensor deq = at::empty({kLutRows, kLutCols}, at::kFloat);
  dequantize_lut(m, deq.data_ptr<float>());
  const at::Tensor w = at::from_blob(const_cast<float*>(fx.w.data()), {kLutRows, kLutCols}, at::kFloat);
  return gptq_loss(w, deq, h);
}

void expect_same_layout(const LutMatrix& a, const LutMatrix& b) {
  EXPECT_EQ(a.lut, b.lut);
  EXPECT_EQ(a.row_ptr, b.row_ptr);
  EXPECT_EQ(a.col, b.col);
}

TEST(GptqLut, DiagonalHessianGivesTheNearestCodesBitForBit) {
  const Fixture fx = make_fixture(1);
  // Distinct diagonal values: the act order really permutes the columns.
  const at::Tensor h = at::diag(at::rand({kLutCols}, at::kDouble) + 0.1);
  for (int bits : {3, 4}) {
    for (bool dense_only : {true, false}) {
      const LutMatrix ref = nearest(fx, bits, dense_only);
      LutMatrix m = ref;
      const LutGptqStats s = gptq_assign_lut(m, fx.w.data(), h, kWhere);
      expect_same_layout(m, ref);
      EXPECT_EQ(m.codes, ref.codes) << bits << " bits, dense_only " << dense_only;
      EXPECT_EQ(m.val, ref.val) << bits << " bits, dense_only " << dense_only;
      EXPECT_EQ(s.loss_gptq, s.loss_nearest);
    }
  }
}

TEST(GptqLut, LowersTheReconstructionLossOfCorrelatedInputs) {
  const Fixture fx = make_fixture(2);
  const at::Tensor h = gptq_hessian(testing::correlated_inputs(kLutTokens, kLutCols, 3));
  const at::Tensor h_heldout = gptq_hessian(testing::correlated_inputs(kLutTokens, kLutCols, 4));
  // GPTQ's loss as a share of the nearest codes'. Measured 0.013-0.022 on the calibration
  // draw, within 3 % of that held out (these inputs are nearly rank 6); asserted with wide
  // room, the gain depends on the draw. Without the error propagation the share is 1.
  constexpr double kMaxLossShare = 0.2;
  // The loss the stats report and the one recomputed here sum the same terms in another
  // order (double): relative agreement to well below one part in 1e9.
  constexpr double kLossRelTol = 1e-9;
  for (int bits : {3, 4}) {
    for (bool dense_only : {true, false}) {
      const LutMatrix ref = nearest(fx, bits, dense_only);
      LutMatrix m = ref;
      const LutGptqStats s = gptq_assign_lut(m, fx.w.data(), h, kWhere);
      SCOPED_TRACE(std::to_string(bits) + " bits, dense_only " + std::to_string(dense_only));
      expect_same_layout(m, ref);
      validate_lut_matrix(m, kWhere);
      EXPECT_NEAR(s.loss_nearest, loss(ref, fx, h), kLossRelTol * s.loss_nearest);
      EXPECT_NEAR(s.loss_gptq, loss(m, fx, h), kLossRelTol * s.loss_gptq);
      EXPECT_LT(s.loss_gptq, kMaxLossShare * s.loss_nearest);
      EXPECT_LT(loss(m, fx, h_heldout), kMaxLossShare * loss(ref, fx, h_heldout));
    }
  }
}

// An input that never fired gets a unit diagonal: its column keeps the nearest codes and
// receives no compensation from the others.
TEST(GptqLut, DeadInputColumnKeepsTheNearestCodes) {
  const Fixture fx = make_fixture(5);
  at::Tensor x = testing::correlated_inputs(kLutTokens, kLutCols, 6);
  constexpr int64_t kDead = 50;
  x.select(1, kDead).zero_();
  const LutMatrix ref = nearest(fx, 4, true);
  LutMatrix m = ref;
  gptq_assign_lut(m, fx.w.data(), gptq_hessian(x), kWhere);
  for (int64_t r = 0; r < kLutRows; ++r) EXPECT_EQ(m.codes[r * kLutCols + kDead], ref.codes[r * kLutCols + kDead]) << r;
  EXPECT_NE(m.codes, ref.codes);  // the live columns were compensated
}

TEST(GptqLut, BitIdenticalForAnyThreadCount) {
  const Fixture fx = make_fixture(7);
  const at::Tensor h = gptq_hessian(testing::correlated_inputs(kLutTokens, kLutCols, 8));
  const int saved = omp_get_max_threads();
  std::vector<LutMatrix> runs;
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    runs.push_back(nearest(fx, 3, false));
    gptq_assign_lut(runs.back(), fx.w.data(), h, kWhere);
  }
  omp_set_num_threads(saved);
  for (size_t i = 1; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i].codes, runs[0].codes) << i;
    EXPECT_EQ(runs[i].val, runs[0].val) << i;
  }
}

TEST(GptqLut, RejectsMismatchedOrNonFiniteHessians) {
  const Fixture fx = make_fixture(9);
  LutMatrix m = nearest(fx, 4, false);
  EXPECT_THROW(gptq_assign_lut(m, fx.w.data(), at::eye(kLutCols - 1, at::kDouble), kWhere), Error);
  EXPECT_THROW(gptq_assign_lut(m, fx.w.data(), at::ones({kLutCols}, at::kDouble), kWhere), Error);
  at::Tensor h = at::eye(kLutCols, at::kDouble);
  h[3][3] = std::numeric_limits<double>::infinity();
  EXPECT_THROW(gptq_assign_lut(m, fx.w.data(), h, kWhere), Error);
}

}  // namespace
}  // namespace fsq
