// AWQ on synthetic data shaped like LLM activations: a few input channels 20-50x larger than
// the rest. The searches must beat round-to-nearest there, never lose to it on the
// calibration set, and give the same answer every run.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "quant_test_util.h"
#include "quantize/awq_search.h"
#include "quantize/fake_quant.h"

namespace fsq {
namespace {

constexpr int64_t kTokens = 2048;
constexpr int64_t kChannels = 256;
constexpr int64_t kOutFeatures = 256;
const UniformQuant kW3G128{3, 128, false};
// The acceptance bar: AWQ's output MSE at least this many times below RTN's.
constexpr double kMinAwqGainWithOutliers = 2.0;
constexpr double kLossTolerance = 1e-6;  // relative: the same MSE computed twice

// Gaussian activations; `outliers` channels scaled by 20..50x (fixed channels, as in LLMs).
at::Tensor activations(uint64_t seed, bool outliers) {
  at::manual_seed(seed);
  at::Tensor x = at::randn({kTokens, kChannels});
  if (outliers) {
    const std::vector<std::pair<int64_t, double>> channels{{3, 20.0}, {77, 30.0}, {150, 40.0}, {201, 50.0}};
    for (const auto& [channel, gain] : channels) x.select(1, channel).mul_(gain);
  }
  return x;
}

at::Tensor gaussian_weight(uint64_t seed, int64_t rows = kOutFeatures) {
  at::manual_seed(seed);
  return at::randn({rows, kChannels}) * 0.02;
}

// y = x W'^T for the AWQ result: the quantized scaled weights see the input divided by s.
at::Tensor awq_output(const at::Tensor& x, const AwqGroupResult& awq, const UniformQuant& q) {
  return at::matmul(x / awq.scale.scales, fake_quantize(awq.to_quantize[0], q).t());
}

at::Tensor rtn_output(const at::Tensor& x, const at::Tensor& w, const UniformQuant& q) {
  return at::matmul(x, rtn_quantize(w, q).t());
}

class AwqSearch : public testing::Test {
 protected:
  void SetUp() override { at::set_num_threads(1); }
};

TEST_F(AwqSearch, BeatsRoundToNearestOnOutlierChannels) {
  const at::Tensor calibration = activations(1, true), held_out = activations(2, true);
  const at::Tensor w = gaussian_weight(3);
  const BlockForward block = concatenated_linear_outputs(calibration);
  const AwqGroupResult awq = awq_search_group(calibration, {w}, kW3G128, block);
  AwqOptions scale_only;
  scale_only.search_clip = false;
  const AwqGroupResult awq_no_clip = awq_search_group(calibration, {w}, kW3G128, block, scale_only);
  const at::Tensor reference = at::matmul(held_out, w.t());
  const double rtn_mse = test::mse(rtn_output(held_out, w, kW3G128), reference);
  const double awq_mse = test::mse(awq_output(held_out, awq, kW3G128), reference);
  const double no_clip_mse = test::mse(awq_output(held_out, awq_no_clip, kW3G128), reference);
  std::printf("outliers, w3g128 asym, held-out tokens: RTN MSE %.4g; AWQ scales only %.4g (RTN/that %.2f); "
              "AWQ scales + clip %.4g (alpha %.2f, RTN/AWQ = %.2f)\n",
              rtn_mse, no_clip_mse, rtn_mse / no_clip_mse, awq_mse, awq.scale.best_alpha, rtn_mse / awq_mse);
  EXPECT_GT(awq.scale.best_alpha, 0.0);
  EXPECT_GE(rtn_mse / awq_mse, kMinAwqGainWithOutliers);
}

TEST_F(AwqSearch, TiesKeepTheSmallerAlpha) {
  // Zero weights quantize exactly at every alpha: all losses are 0, and alpha 0 must win.
  const at::Tensor x = activations(16, true);
  const ScaleSearchResult search = awq_search_scales(x, {at::zeros({8, kChannels})}, kW3G128,
                                                     concatenated_linear_outputs(x));
  for (const AlphaLoss& entry : search.table) ASSERT_EQ(entry.loss, 0.0);
  EXPECT_EQ(search.best_alpha, 0.0);
  EXPECT_TRUE(at::equal(search.scales, at::ones({kChannels})));
}

TEST_F(AwqSearch, ScaleSearchNeverLosesToRoundToNearestWithoutOutliers) {
  const at::Tensor x = activations(4, false);
  const at::Tensor w = gaussian_weight(5);
  const ScaleSearchResult search = awq_search_scales(x, {w}, kW3G128, concatenated_linear_outputs(x));
  ASSERT_EQ(search.table.size(), 20u);
  EXPECT_EQ(search.table[0].alpha, 0.0);
  EXPECT_DOUBLE_EQ(search.table[19].alpha, 0.95);
  // The grid's alpha = 0 entry is plain RTN.
  const double rtn_mse = test::mse(rtn_output(x, w, kW3G128), at::matmul(x, w.t()));
  EXPECT_NEAR(search.table[0].loss, rtn_mse, kLossTolerance * rtn_mse);
  double best = search.table[0].loss;
  for (const AlphaLoss& entry : search.table) best = std::min(best, entry.loss);
  EXPECT_EQ(best, search.table[static_cast<size_t>(search.best_alpha * 20 + 0.5)].loss);
  EXPECT_LE(best, search.table[0].loss);
  std::printf("no outliers: best alpha %.2f, loss %.4g vs RTN %.4g\n", search.best_alpha, best, rtn_mse);
}

TEST_F(AwqSearch, AlphaZeroScalesAreExactlyOne) {
  const at::Tensor s = awq_scales(mean_abs_per_channel(activations(6, true)), 0.0);
  EXPECT_TRUE(at::equal(s, at::ones({kChannels})));
}

TEST_F(AwqSearch, ScalesStraddleOne) {
  const at::Tensor s = awq_scales(mean_abs_per_channel(activations(6, true)), 0.5);
  EXPECT_NEAR((s.max() * s.min()).item<double>(), 1.0, 1e-5);
  EXPECT_GT(s[77].item<double>(), s[0].item<double>());  // an outlier channel is scaled up
}

TEST_F(AwqSearch, ScaleSearchCoversEveryLinearOfTheBlock) {
  // Two linears sharing the input: the block loss is over both outputs.
  const at::Tensor x = activations(7, true);
  const std::vector<at::Tensor> weights{gaussian_weight(8, 64), gaussian_weight(9, 32)};
  const ScaleSearchResult search = awq_search_scales(x, weights, kW3G128, concatenated_linear_outputs(x));
  const at::Tensor s = awq_scales(mean_abs_per_channel(x), search.table[7].alpha);
  const at::Tensor reference = at::cat({at::matmul(x, weights[0].t()), at::matmul(x, weights[1].t())}, 1);
  const at::Tensor candidate = at::cat({at::matmul(x, (fake_quantize(weights[0] * s, kW3G128) / s).t()),
                                        at::matmul(x, (fake_quantize(weights[1] * s, kW3G128) / s).t())},
                                       1);
  const double loss = test::mse(candidate, reference);
  EXPECT_NEAR(search.table[7].loss, loss, kLossTolerance * loss);
}

// The clip search's grid (ClipSearchOptions defaults): factor_i = 1 - 0.5 * i / 20.
constexpr int kClipGrid = 20;
double clip_factor(int i) { return 1.0 - 0.5 * i / kClipGrid; }

// One (row, group)'s contribution to the output error: mean over tokens of (x_g . delta)^2,
// with the group quantized on its own as a 1 x group_cols matrix.
double group_error(const at::Tensor& w, const at::Tensor& x, int64_t row, int64_t group, double clip_max) {
  const int64_t cols = kW3G128.group_size;
  const at::Tensor w_group = w[row].narrow(0, group * cols, cols).unsqueeze(0);
  const at::Tensor x_group = x.narrow(1, group * cols, cols);
  const at::Tensor quantized = fake_quantize(w_group.clamp(-clip_max, clip_max), kW3G128);
  return at::matmul(x_group, (w_group - quantized).t()).pow(2).mean().item<double>();
}

// Each (row, group)'s chosen clip is a grid factor whose error is the least of the grid's.
void expect_best_grid_factors(const at::Tensor& x, const at::Tensor& w) {
  const at::Tensor clip = awq_search_clip(w, x, kW3G128);
  const at::Tensor full = w.reshape({8, 2, 128}).abs().amax(-1);
  for (int64_t row = 0; row < 8; ++row) {
    for (int64_t group = 0; group < 2; ++group) {
      const double max_abs = full[row][group].item<double>(), chosen = clip[row][group].item<double>();
      const int step = static_cast<int>(std::lround((1.0 - chosen / max_abs) * 2 * kClipGrid));
      ASSERT_TRUE(step >= 0 && step < kClipGrid) << "factor " << chosen / max_abs;
      EXPECT_NEAR(chosen / max_abs, clip_factor(step), 1e-6);
      const double chosen_error = group_error(w, x, row, group, chosen);
      for (int i = 0; i < kClipGrid; ++i) {
        const double other = group_error(w, x, row, group, max_abs * clip_factor(i));
        EXPECT_LE(chosen_error, other * (1 + kLossTolerance)) << "row " << row << " group " << group << " i " << i;
      }
    }
  }
  const at::Tensor reference = at::matmul(x, w.t());
  const double clipped = test::mse(at::matmul(x, fake_quantize_clipped(w, kW3G128, clip).t()), reference);
  const double unclipped = test::mse(at::matmul(x, fake_quantize(w, kW3G128).t()), reference);
  std::printf("clip search on %ld tokens: output MSE %.4g clipped vs %.4g unclipped\n", long(x.size(0)), clipped,
              unclipped);
  EXPECT_LT(clipped, unclipped);
}

// 512 tokens, groups of 128 columns: the errors come from each group's Gram matrix.
TEST_F(AwqSearch, ClipSearchPicksTheBestGridFactorOfEachGroup) {
  expect_best_grid_factors(activations(11, true).narrow(0, 0, 512), gaussian_weight(10, 8));
}

// 96 tokens, fewer than a group's 128 columns: the errors come from the tokens themselves.
TEST_F(AwqSearch, ClipSearchOnFewerTokensThanGroupColumnsPicksTheBestFactorToo) {
  expect_best_grid_factors(activations(16, true).narrow(0, 0, 96), gaussian_weight(17, 8));
}

TEST_F(AwqSearch, ClipSearchIgnoresChunkingAndSubsamplesEvenly) {
  const at::Tensor x = activations(12, true);
  const at::Tensor w = gaussian_weight(15, 64);
  ClipSearchOptions odd_chunks;
  odd_chunks.rows_per_chunk = 7;
  const at::Tensor by_default = awq_search_clip(w, x, kW3G128);
  EXPECT_TRUE(at::equal(awq_search_clip(w, x, kW3G128, odd_chunks), by_default));
  // 2048 tokens, 512 kept: every 4th.
  EXPECT_TRUE(at::equal(awq_search_clip(w, x.slice(0, 0, kTokens, 4), kW3G128), by_default));
}

TEST_F(AwqSearch, RunsAreBitIdentical) {
  const at::Tensor x = activations(13, true);
  const at::Tensor w = gaussian_weight(14);
  const AwqGroupResult a = awq_search_group(x, {w}, kW3G128, concatenated_linear_outputs(x));
  const AwqGroupResult b = awq_search_group(x, {w}, kW3G128, concatenated_linear_outputs(x));
  EXPECT_EQ(a.scale.best_alpha, b.scale.best_alpha);
  EXPECT_TRUE(at::equal(a.scale.scales, b.scale.scales));
  EXPECT_TRUE(at::equal(a.clip_max[0], b.clip_max[0]));
  EXPECT_TRUE(at::equal(a.to_quantize[0], b.to_quantize[0]));
  for (size_t i = 0; i < a.scale.table.size(); ++i) EXPECT_EQ(a.scale.table[i].loss, b.scale.table[i].loss);
}

}  // namespace
}  // namespace fsq
