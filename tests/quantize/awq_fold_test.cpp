// Folding AWQ scales into what precedes the quantized linears leaves the fp block unchanged.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "common/error.h"
#include "quant_test_util.h"
#include "quantize/awq_fold.h"
#include "quantize/awq_search.h"

namespace fsq {
namespace {

constexpr double kFoldTolerance = 1e-5;  // relative output error: float32 rounding only
constexpr double kRmsEps = 1e-6;

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& gain) {
  return x * at::rsqrt(x.pow(2).mean(-1, true) + kRmsEps) * gain;
}

// Scales as the search makes them: a wide spread, from the activations of a few outliers.
at::Tensor spread_scales(int64_t channels) {
  at::Tensor magnitude = at::rand({channels}) + 0.1;
  magnitude.narrow(0, 0, 3).mul_(40.0);
  return awq_scales(magnitude, 0.7);
}

TEST(AwqFold, NormFoldKeepsTheBlockOutput) {
  at::set_num_threads(1);
  at::manual_seed(31);
  const at::Tensor x = at::randn({16, 64}), gain = at::rand({64}) + 0.5;
  const at::Tensor w1 = at::randn({32, 64}), w2 = at::randn({48, 64});
  const at::Tensor s = spread_scales(64);
  const at::Tensor normed = rms_norm(x, gain), folded = rms_norm(x, fold_scales_into_norm(gain, s));
  for (const at::Tensor& w : {w1, w2}) {
    const at::Tensor reference = at::matmul(normed, w.t());
    EXPECT_LE(test::relative_error(at::matmul(folded, scale_input_columns(w, s).t()), reference), kFoldTolerance);
  }
}

TEST(AwqFold, LinearFoldKeepsTheBlockOutput) {
  at::set_num_threads(1);
  at::manual_seed(32);
  const at::Tensor x = at::randn({16, 48});
  const at::Tensor w_prev = at::randn({64, 48}), b_prev = at::randn({64}), w = at::randn({32, 64});
  const at::Tensor s = spread_scales(64);
  const at::Tensor reference = at::matmul(at::matmul(x, w_prev.t()) + b_prev, w.t());
  const LinearWeights prev = fold_scales_into_output_rows(w_prev, b_prev, s);
  ASSERT_TRUE(prev.bias.has_value());
  const at::Tensor folded = at::matmul(at::matmul(x, prev.weight.t()) + *prev.bias, scale_input_columns(w, s).t());
  EXPECT_LE(test::relative_error(folded, reference), kFoldTolerance);
  EXPECT_FALSE(fold_scales_into_output_rows(w_prev, std::nullopt, s).bias.has_value());
}

TEST(AwqFold, RejectsScalesOfTheWrongLength) {
  const at::Tensor s = at::ones({8});
  EXPECT_THROW(scale_input_columns(at::ones({4, 6}), s), Error);
  EXPECT_THROW(fold_scales_into_norm(at::ones({6}), s), Error);
  EXPECT_THROW(fold_scales_into_output_rows(at::ones({6, 8}), std::nullopt, s), Error);
  EXPECT_THROW(fold_scales_into_output_rows(at::ones({8, 8}), at::ones({6}), s), Error);
}

}  // namespace
}  // namespace fsq
