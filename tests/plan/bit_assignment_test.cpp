// Per-layer widths at an average-bits budget against brute force.
#include <gtest/gtest.h>

#include <random>

#include "plan/bit_assignment.h"

namespace fsq::plan {
namespace {

TEST(BitAssignment, MatchesBruteForceOnRandomLayers) {
  std::mt19937 rng(35);
  std::lognormal_distribution<double> sensitivity(0, 1.5);
  std::uniform_int_distribution<int> size(1, 4);
  const std::vector<int> widths = {3, 4, 8};
  for (int trial = 0; trial < 30; ++trial) {
    const int L = 3 + trial % 6;  // 3..8 layers
    std::vector<std::vector<double>> omega(L);
    std::vector<double> params(L);
    double total = 0;
    for (int l = 0; l < L; ++l) {
      double s = sensitivity(rng);
      params[l] = size(rng) * 1e6;
      total += params[l];
      for (int b : widths) omega[l].push_back(s * params[l] / ((1 << b) - 1.0) / ((1 << b) - 1.0));
    }
    const double target = 3 + 0.25 * (trial % 9);  // 3 .. 5
    // Brute force over W^L assignments.
    double best = INFINITY;
    std::vector<int> idx(L, 0);
    for (;;) {
      double bits = 0, om = 0;
      for (int l = 0; l < L; ++l) bits += widths[idx[l]] * params[l], om += omega[l][idx[l]];
      if (bits / total <= target + 1e-12) best = std::min(best, om);
      int l = 0;
      while (l < L && ++idx[l] == static_cast<int>(widths.size())) idx[l++] = 0;
      if (l == L) break;
    }
    BitAssignment a = assign_bits(omega, params, widths, target, 30);
    ASSERT_TRUE(a.found) << a.status;
    EXPECT_EQ(a.status, "optimal");
    // CBC's relative gap (1e-9) on an objective scaled to max omega 1.
    EXPECT_NEAR(a.omega, best, 1e-6 * best) << "trial " << trial;
    EXPECT_LE(a.avg_bits, target + 1e-9);
    ASSERT_EQ(a.bits.size(), static_cast<size_t>(L));
  }
}

TEST(BitAssignment, SensitiveLayersGetTheBits) {
  // Four equal layers, one 100x more sensitive: a 3.25-bit budget buys one 4-bit layer.
  std::vector<std::vector<double>> omega = {{1, 0.2}, {100, 20}, {1, 0.2}, {1, 0.2}};
  BitAssignment a = assign_bits(omega, {1, 1, 1, 1}, {3, 4}, 3.25, 10);
  ASSERT_TRUE(a.found);
  EXPECT_EQ(a.bits, (std::vector<int>{3, 4, 3, 3}));
  EXPECT_DOUBLE_EQ(a.omega, 23);
  EXPECT_DOUBLE_EQ(uniform_omega(omega, 0), 103);
  EXPECT_THROW(assign_bits(omega, {1, 1, 1, 1}, {3, 4}, 2.5, 10), std::exception);
}

}  // namespace
}  // namespace fsq::plan
