// GPTQ against round-to-nearest: identical when the inputs are uncorrelated (nothing to
// compensate), a lower reconstruction loss when they are correlated, codes inside the
// round-to-nearest range, dead inputs left at nearest, and clear errors on bad Hessians.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "common/error.h"
#include "formats/quant/w8a8_quant.h"
#include "quantize/gptq.h"
#include "correlated_inputs.h"

namespace fsq {
namespace {

constexpr int64_t kGptqRows = 24, kGptqCols = 128, kGptqTokens = 1024;
// The types GPTQ is run with here: W8A8's int8 per channel, and grouped 4/3-bit ones.
const std::vector<UniformQuant> kTypes = {kW8A8Weights, UniformQuant{4, 32, false}, UniformQuant{3, 64, true}};

at::Tensor correlated_inputs(int64_t tokens, int64_t seed) { return testing::correlated_inputs(tokens, kGptqCols, seed); }

void expect_same(const GroupQuantized& a, const GroupQuantized& b, const char* what) {
  EXPECT_TRUE(at::equal(a.codes, b.codes)) << what;
  EXPECT_TRUE(at::equal(a.scales, b.scales)) << what;
  EXPECT_TRUE(at::equal(a.zeros, b.zeros)) << what;
}

TEST(Gptq, DiagonalHessianIsRoundToNearestBitForBit) {
  at::manual_seed(1);
  const at::Tensor w = at::randn({kGptqRows, kGptqCols});
  const at::Tensor h = at::diag(at::rand({kGptqCols}, at::kDouble) + 0.1);
  for (const UniformQuant& q : kTypes) expect_same(gptq_quantize(w, h, q), quantize_groups(w, q), "diagonal H");
}

TEST(Gptq, LowersTheReconstructionLossOfCorrelatedInputs) {
  at::manual_seed(2);
  const at::Tensor w = at::randn({kGptqRows, kGptqCols});
  const at::Tensor h = gptq_hessian(correlated_inputs(kGptqTokens, 3));
  // A second draw of the same input distribution: the gain is not fitted to the calibration
  // tokens only.
  const at::Tensor h_heldout = gptq_hessian(correlated_inputs(kGptqTokens, 4));
  // GPTQ's loss as a share of nearest rounding's. Measured: 0.024 (8-bit), 0.035 (4-bit),
  // 0.039 (3-bit) on the calibration tokens, within 4 % of that held out (these inputs are
  // nearly rank 6); asserted with wide room, the gain depends on the draw. Without the error
  // propagation the share is 1.
  constexpr double kMaxLossShare = 0.2;
  for (const UniformQuant& q : kTypes) {
    const GroupQuantized g = gptq_quantize(w, h, q);
    const at::Tensor wq = dequantize_groups(g, q), nearest = fake_quantize(w, q);
    EXPECT_LT(gptq_loss(w, wq, h), kMaxLossShare * gptq_loss(w, nearest, h)) << q.bits;
    EXPECT_LT(gptq_loss(w, wq, h_heldout), kMaxLossShare * gptq_loss(w, nearest, h_heldout)) << q.bits;
    // Codes within the round-to-nearest range: symmetric ones never reach -2^(bits-1) (byte
    // 0 of W8A8, which its format refuses).
    const int64_t top = (int64_t{1} << q.bits) - 1;
    EXPECT_LE(g.codes.max().item<int64_t>(), top);
    if (q.symmetric) {
      EXPECT_GE(g.codes.min().item<int64_t>(), 1);
    }
    // Scales are fp16 values, as the checkpoint stores them.
    EXPECT_TRUE(at::equal(g.scales, g.scales.to(at::kHalf).to(at::kFloat)));
  }
}

// An input that never fired on the calibration set gets a unit diagonal: its column is
// rounded to nearest and receives no compensation from the others.
TEST(Gptq, DeadInputColumnStaysAtNearest) {
  at::manual_seed(5);
  const at::Tensor w = at::randn({kGptqRows, kGptqCols});
  at::Tensor x = correlated_inputs(kGptqTokens, 6);
  constexpr int64_t kDead = 70;
  x.select(1, kDead).zero_();
  const GroupQuantized g = gptq_quantize(w, gptq_hessian(x), kW8A8Weights);
  const GroupQuantized nearest = quantize_groups(w, kW8A8Weights);
  EXPECT_TRUE(at::equal(g.codes.select(1, kDead), nearest.codes.select(1, kDead)));
  EXPECT_FALSE(at::equal(g.codes, nearest.codes));  // the live columns were compensated
}

TEST(Gptq, RejectsMismatchedOrNonFiniteHessians) {
  const at::Tensor w = at::randn({4, 32});
  EXPECT_THROW(gptq_quantize(w, at::eye(31, at::kDouble), kW8A8Weights), Error);
  EXPECT_THROW(gptq_quantize(w, at::ones({32}, at::kDouble), kW8A8Weights), Error);
  at::Tensor h = at::eye(32, at::kDouble);
  h[3][3] = std::numeric_limits<double>::infinity();
  EXPECT_THROW(gptq_quantize(w, h, kW8A8Weights), Error);
  at::Tensor bad_w = w.clone();
  bad_w[1][2] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(gptq_quantize(bad_w, at::eye(32, at::kDouble), kW8A8Weights), Error);
}

}  // namespace
}  // namespace fsq
