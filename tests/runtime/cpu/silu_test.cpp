// The fast decode's SiLU (runtime/cpu/silu.h): every ISA against the libm spec on lengths
// around the vector widths and values across the float range, with a guard past the end.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "runtime/cpu/silu.h"
#include "uniform_test_support.h"

namespace fsq {
namespace {

constexpr float kSiluGuard = 12345.0f;  // past the outputs; the kernel must leave it

// Gates ~ N(0, 4) (SmolLM2's gate outputs reach |g| ~ 35), with the edges of the
// exponential planted: zero, signed zero, tiny, the clamps at -87 and -104, overflow range.
std::vector<float> gates(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  const float planted[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 20.0f, -20.0f, 86.5f, -86.5f, -87.5f, 88.5f, -100.0f, -110.0f, 200.0f};
  std::vector<float> g(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) g[static_cast<size_t>(i)] = i % 7 == 3 ? planted[(i / 7) % 13] : normal(rng);
  return g;
}

TEST(SiluMul, EveryIsaMatchesTheSpecWithinItsBound) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-3.0f, 3.0f);
  for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1536}) {
    const std::vector<float> g = gates(n, static_cast<uint32_t>(n));
    std::vector<float> up(static_cast<size_t>(n));
    for (float& u : up) u = uniform(rng);
    std::vector<float> want = g;
    cpu::silu_mul_reference(want.data(), up.data(), n);
    for (cpu::CpuIsa isa : test::supported_isas()) {
      SCOPED_TRACE(std::string(cpu::cpu_isa_name(isa)) + " n=" + std::to_string(n));
      std::vector<float> got = g;
      got.push_back(kSiluGuard);
      cpu::silu_mul(got.data(), up.data(), n, isa);
      EXPECT_EQ(got.back(), kSiluGuard);
      for (int64_t i = 0; i < n; ++i) {
        const auto k = static_cast<size_t>(i);
        ASSERT_TRUE(std::isfinite(got[k])) << "gate " << g[k];
        const double bound = cpu::kSiluMulUlps * std::numeric_limits<float>::epsilon() * std::fabs(want[k]) +
                             cpu::kSiluMulTiny * std::fabs(up[k]);
        ASSERT_NEAR(got[k], want[k], bound) << "gate " << g[k] << " up " << up[k];
      }
    }
  }
}

// The spec itself against double precision: SiLU is well conditioned (relative error of
// g / (1 + exp(-g)) stays within a few ulps), so a few ulps cover it, except below g = -88.7,
// where exp(-g) overflows to infinity and the spec gives -0 for results under 1e-36.
TEST(SiluMul, SpecIsWithinAFewUlpsOfDouble) {
  const std::vector<float> g = gates(2000, 9);
  const std::vector<float> up(g.size(), 1.0f);
  std::vector<float> got = g;
  cpu::silu_mul_reference(got.data(), up.data(), static_cast<int64_t>(g.size()));
  for (size_t k = 0; k < g.size(); ++k) {
    const double x = g[k], truth = x / (1.0 + std::exp(-x));
    EXPECT_NEAR(got[k], truth, 4.0 * std::numeric_limits<float>::epsilon() * std::fabs(truth) + cpu::kSiluMulTiny)
        << "gate " << g[k];
  }
}

TEST(SiluMul, NanStaysNan) {
  for (cpu::CpuIsa isa : test::supported_isas()) {
    std::vector<float> g(19, 1.0f), up(19, 1.0f);
    g[2] = g[17] = std::numeric_limits<float>::quiet_NaN();
    cpu::silu_mul(g.data(), up.data(), 19, isa);
    EXPECT_TRUE(std::isnan(g[2]) && std::isnan(g[17])) << cpu::cpu_isa_name(isa);
    EXPECT_FLOAT_EQ(g[0], static_cast<float>(1.0 / (1.0 + std::exp(-1.0)))) << cpu::cpu_isa_name(isa);
  }
}

}  // namespace
}  // namespace fsq
