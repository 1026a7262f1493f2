// fake_quantize against values worked out by hand from the formulas in uniform_quant.h, and
// the error bound every uniform quantizer must meet.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/error.h"
#include "quant_test_util.h"
#include "quantize/fake_quant.h"

namespace fsq {
namespace {

using test::matrix;
using test::values;

// Scale of 1/127 (8-bit symmetric, max |w| = 1) and 2/255 (8-bit asymmetric over [-1, 1])
// after fp16 rounding: mantissas 1032 and 1028 at exponent 2^-17 (unrounded: 1032.06, 1028.02).
constexpr float kScale8Sym = 1032.0f / 131072.0f;
constexpr float kScale8Asym = 1028.0f / 131072.0f;

void expect_values(const at::Tensor& got, const std::vector<float>& expected) {
  EXPECT_EQ(values(got), expected);
}

TEST(FakeQuant, Asymmetric2BitGroup) {
  // range 2.25 / 3 = scale 0.75; zero = round(0.75 / 0.75) = 1; codes round(w / 0.75) + 1.
  const at::Tensor w = matrix({-0.75f, -0.25f, 0.5f, 1.5f}, 1, 4);
  const UniformQuant q{2, 4, false};
  expect_values(fake_quantize(w, q), {-0.75f, 0.0f, 0.75f, 1.5f});
  const GroupQuantized g = quantize_groups(w, q);
  EXPECT_EQ(values(g.codes), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(values(g.scales), std::vector<float>{0.75f});
  EXPECT_EQ(values(g.zeros), std::vector<float>{1});
}

TEST(FakeQuant, Asymmetric3BitRoundsHalfToEven) {
  // scale 3.5 / 7 = 0.5, zero 0: w / scale = 0, 0.5, 1.5, 7 -> codes 0, 0, 2, 7 (ties to even).
  const UniformQuant q{3, 4, false};
  expect_values(fake_quantize(matrix({0.0f, 0.25f, 0.75f, 3.5f}, 1, 4), q), {0.0f, 0.0f, 1.0f, 3.5f});
}

TEST(FakeQuant, Symmetric4BitGroup) {
  // scale 1.75 / 7 = 0.25; w / scale = -7, 1.2, 3.5, 0.4 -> -7, 1, 4, 0; stored + 8.
  const at::Tensor w = matrix({-1.75f, 0.3f, 0.875f, 0.1f}, 1, 4);
  const UniformQuant q{4, 4, true};
  expect_values(fake_quantize(w, q), {-1.75f, 0.25f, 1.0f, 0.0f});
  const GroupQuantized g = quantize_groups(w, q);
  EXPECT_EQ(values(g.codes), (std::vector<float>{1, 9, 12, 8}));
  EXPECT_EQ(values(g.zeros), std::vector<float>{8});
}

TEST(FakeQuant, Symmetric3BitGroup) {
  // scale 0.75 / 3 = 0.25; w / scale = 3, -2, 0.5, 1.5 -> 3, -2, 0, 2.
  expect_values(fake_quantize(matrix({0.75f, -0.5f, 0.125f, 0.375f}, 1, 4), UniformQuant{3, 4, true}),
                {0.75f, -0.5f, 0.0f, 0.5f});
}

TEST(FakeQuant, Symmetric8BitUsesTheFp16RoundedScale) {
  // 1 / kScale8Sym = 126.99 -> 127; -0.5 / kScale8Sym = -63.504 -> -64.
  expect_values(fake_quantize(matrix({1.0f, -0.5f}, 1, 2), UniformQuant{8, 2, true}),
                {127 * kScale8Sym, -64 * kScale8Sym});
}

TEST(FakeQuant, Asymmetric8BitSaturatesTheTopCode) {
  // zero = round(1 / kScale8Asym = 127.502) = 128; the top weight wants code 256 -> 255.
  const at::Tensor w = matrix({-1.0f, 1.0f}, 1, 2);
  const UniformQuant q{8, 2, false};
  expect_values(fake_quantize(w, q), {-128 * kScale8Asym, 127 * kScale8Asym});
  EXPECT_EQ(values(quantize_groups(w, q).codes), (std::vector<float>{0, 255}));
}

TEST(FakeQuant, AllZeroGroupStaysZero) {
  // The 1e-5 range floor keeps the scale positive: no 0/0.
  expect_values(fake_quantize(at::zeros({1, 4}), UniformQuant{4, 4, false}), {0, 0, 0, 0});
}

TEST(FakeQuant, PerChannelIsOneGroupPerRow) {
  const at::Tensor w = matrix({-0.75f, -0.25f, 0.5f, 1.5f,  //
                               -1.5f, -0.5f, 1.0f, 3.0f},
                              2, 4);
  const UniformQuant q{2, 0, false};
  expect_values(fake_quantize(w, q), {-0.75f, 0.0f, 0.75f, 1.5f, -1.5f, 0.0f, 1.5f, 3.0f});
  EXPECT_EQ(values(quantize_groups(w, q).scales), (std::vector<float>{0.75f, 1.5f}));
}

TEST(FakeQuant, GroupsRunAlongEachRowWithOddRows) {
  // 3 rows x 2 groups of the 3-bit symmetric pattern above, the second group reversed, row r
  // scaled by 2^r (powers of two keep every value exact).
  const std::vector<float> pattern{0.75f, -0.5f, 0.125f, 0.375f}, dequantized{0.75f, -0.5f, 0.0f, 0.5f};
  std::vector<float> w, expected;
  for (int r = 0; r < 3; ++r) {
    const float f = std::ldexp(1.0f, r);
    for (int i = 0; i < 4; ++i) w.push_back(pattern[i] * f), expected.push_back(dequantized[i] * f);
    for (int i = 3; i >= 0; --i) w.push_back(pattern[i] * f), expected.push_back(dequantized[i] * f);
  }
  const UniformQuant q{3, 4, true};
  expect_values(fake_quantize(matrix(w, 3, 8), q), expected);
  EXPECT_EQ(values(quantize_groups(matrix(w, 3, 8), q).scales), (std::vector<float>{0.25f, 0.25f, 0.5f, 0.5f, 1, 1}));
}

TEST(FakeQuant, ClippingClampsEachGroupBeforeQuantizing) {
  // Row 0 group 0 clipped to 1.5: -0.75, -0.25, 0.5, 1.5 is the asymmetric pattern above;
  // group 1 (max 0.5) is untouched by a clip of 2.
  const at::Tensor w = matrix({-0.75f, -0.25f, 0.5f, 3.0f, 0.5f, -0.25f, 0.25f, 0.0f}, 1, 8);
  const at::Tensor clip = matrix({1.5f, 2.0f}, 1, 2);
  const UniformQuant q{2, 4, false};
  expect_values(clip_groups(w, clip, q), {-0.75f, -0.25f, 0.5f, 1.5f, 0.5f, -0.25f, 0.25f, 0.0f});
  const std::vector<float> got = values(fake_quantize_clipped(w, q, clip));
  EXPECT_EQ(std::vector<float>(got.begin(), got.begin() + 4), (std::vector<float>{-0.75f, 0.0f, 0.75f, 1.5f}));
  EXPECT_EQ(values(fake_quantize_clipped(w, q, clip)), values(fake_quantize(clip_groups(w, clip, q), q)));
}

TEST(FakeQuant, ErrorIsAtMostHalfAStepAndCodesFitTheBits) {
  at::manual_seed(11);
  const at::Tensor w = at::randn({7, 256});
  for (int bits : {2, 3, 4, 8}) {
    for (int64_t group : {32, 128, 0}) {
      for (bool symmetric : {false, true}) {
        const UniformQuant q{bits, group, symmetric};
        SCOPED_TRACE(testing::Message() << bits << " bits, group " << group << (symmetric ? " sym" : " asym"));
        const GroupQuantized g = quantize_groups(w, q);
        EXPECT_LE(g.codes.max().item<int>(), (1 << bits) - 1);
        const double qmax = symmetric ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
        // Half a step, plus what fp16 rounding the scale down (relative 2^-11) can add when
        // the top code saturates: up to qmax * 2^-11 steps.
        const at::Tensor step = g.scales.repeat_interleave(q.group_cols(256), 1);
        const at::Tensor bound = step * (0.5 + (qmax + 1) * std::ldexp(1.0, -11));
        const at::Tensor w_hat = fake_quantize(w, q);
        EXPECT_TRUE(((w - w_hat).abs() <= bound).all().item<bool>());
        EXPECT_TRUE(at::equal(dequantize_groups(g, q), w_hat));
      }
    }
  }
}

TEST(FakeQuant, RtnIsFakeQuantization) {
  at::manual_seed(12);
  const at::Tensor w = at::randn({4, 64});
  EXPECT_TRUE(at::equal(rtn_quantize(w, UniformQuant{3, 32, false}), fake_quantize(w, UniformQuant{3, 32, false})));
}

TEST(FakeQuant, RejectsBadShapesAndBitWidths) {
  EXPECT_THROW(fake_quantize(at::zeros({2, 100}), UniformQuant{4, 64, false}), Error);
  EXPECT_THROW(fake_quantize(at::zeros({128}), UniformQuant{4, 64, false}), Error);
  EXPECT_THROW(fake_quantize(at::zeros({2, 128}), UniformQuant{9, 64, false}), Error);
  EXPECT_THROW(quantize_groups(at::full({1, 4}, NAN), UniformQuant{4, 4, false}), Error);
}

}  // namespace
}  // namespace fsq
