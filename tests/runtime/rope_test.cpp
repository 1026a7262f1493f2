// RoPE tables: plain frequencies, and llama3 scaling's three bands.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "common/error.h"
#include "runtime/model.h"

namespace fsq {
namespace {

constexpr double kAngleTolerance = 1e-9;

// Angle of pair i at position p recovered from the tables (atan2 of sin/cos).
double angle(const RopeTables& t, int64_t p, int64_t i) {
  return std::atan2(t.sin[p][i].item<double>(), t.cos[p][i].item<double>());
}

TEST(Rope, UnscaledAnglesArePositionTimesInverseFrequency) {
  ModelConfig c;
  c.head_dim = 8;
  c.rope_theta = 10000.0;
  auto t = make_rope_tables(c, 4, at::kDouble, c10::Device(c10::kCPU));
  ASSERT_EQ(t.cos.sizes(), (std::vector<int64_t>{4, 8}));
  for (int64_t i = 0; i < 4; ++i) {
    double expected = std::remainder(3.0 * std::pow(10000.0, -2.0 * i / 8), 2 * std::numbers::pi);
    EXPECT_NEAR(angle(t, 3, i), expected, kAngleTolerance);
    EXPECT_NEAR(angle(t, 3, i + 4), expected, kAngleTolerance);  // rotate_half duplicates the half
  }
}

TEST(Rope, Llama3ScalingKeepsHighFrequenciesAndDividesLowOnes) {
  // Llama-3.1 style: factor 8, low 1, high 4, original context 8192, head_dim 128.
  ModelConfig c;
  c.head_dim = 128;
  c.rope_theta = 500000.0;
  c.rope_scaling = RopeScaling{"llama3", 8.0, 1.0, 4.0, 8192};
  auto scaled = make_rope_tables(c, 2, at::kDouble, c10::Device(c10::kCPU));
  ModelConfig plain = c;
  plain.rope_scaling.reset();
  auto base = make_rope_tables(plain, 2, at::kDouble, c10::Device(c10::kCPU));
  // Pair 0: wavelength 2*pi < 8192/4 -> unchanged. Pair 63: wavelength far above 8192 -> / 8.
  EXPECT_NEAR(angle(scaled, 1, 0), angle(base, 1, 0), kAngleTolerance);
  EXPECT_NEAR(angle(scaled, 1, 63), angle(base, 1, 63) / 8.0, kAngleTolerance);
  // Medium band: strictly between the two.
  for (int64_t i = 0; i < 64; ++i) {
    double inv = std::pow(500000.0, -2.0 * i / 128), wavelen = 2 * std::numbers::pi / inv;
    if (wavelen > 8192.0 / 4 && wavelen < 8192.0) {
      double a = angle(scaled, 1, i);
      EXPECT_LT(a, inv);
      EXPECT_GT(a, inv / 8.0);
    }
  }
}

TEST(Rope, UnknownScalingTypeIsAnError) {
  ModelConfig c;
  c.head_dim = 8;
  c.rope_scaling = RopeScaling{"yarn", 4.0};
  EXPECT_THROW(make_rope_tables(c, 4, at::kFloat, c10::Device(c10::kCPU)), Error);
}

}  // namespace
}  // namespace fsq
