// Channel statistics against a direct computation, and merging.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "calib/channel_stats.h"

namespace fsq {
namespace {

constexpr double kMeanRelTolerance = 1e-6;  // issue: <= 1e-6 relative for means
// Merging changes only the order of double sums; the float results may differ by one ulp,
// at most FLT_EPSILON (2^-23) relative.
constexpr double kMergeRelTolerance = std::numeric_limits<float>::epsilon();

std::vector<float> random_rows(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.5f, 2.0f);
  std::vector<float> x(static_cast<size_t>(rows * cols));
  for (auto& v : x) v = n(rng);
  return x;
}

void expect_close(double got, double want, double rel) { EXPECT_LE(std::fabs(got - want), rel * std::max(1e-30, std::fabs(want))) << got << " vs " << want; }

TEST(ChannelStats, MatchesDirectComputation) {
  const int64_t rows = 300, cols = 17;
  auto x = random_rows(rows, cols, 3);
  x[5 * cols + 4] = -40.0f;  // an outlier: absmax takes the magnitude
  ChannelStats s(cols);
  s.add_rows(x.data(), 100);
  s.add_rows(x.data() + 100 * cols, rows - 100);
  ASSERT_EQ(s.count(), rows);
  auto mean = s.mean(), sq = s.sqmean();
  for (int64_t c = 0; c < cols; ++c) {
    long double sum = 0, sumsq = 0;
    float absmax = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const float v = x[static_cast<size_t>(r * cols + c)];
      sum += v;
      sumsq += static_cast<long double>(v) * v;
      absmax = std::max(absmax, std::fabs(v));
    }
    EXPECT_EQ(s.absmax()[static_cast<size_t>(c)], absmax);
    expect_close(mean[static_cast<size_t>(c)], static_cast<double>(sum / rows), kMeanRelTolerance);
    expect_close(sq[static_cast<size_t>(c)], static_cast<double>(sumsq / rows), kMeanRelTolerance);
  }
  EXPECT_EQ(s.absmax()[4], 40.0f);
}

TEST(ChannelStats, MergedShardsEqualOnePass) {
  const int64_t rows = 257, cols = 9;
  auto x = random_rows(rows, cols, 11);
  ChannelStats one(cols), a(cols), b(cols);
  one.add_rows(x.data(), rows);
  a.add_rows(x.data(), 120);
  b.add_rows(x.data() + 120 * cols, rows - 120);
  a.merge(b);
  EXPECT_EQ(a.count(), one.count());
  EXPECT_EQ(a.absmax(), one.absmax());
  for (size_t c = 0; c < static_cast<size_t>(cols); ++c) {
    expect_close(a.mean()[c], one.mean()[c], kMergeRelTolerance);
    expect_close(a.sqmean()[c], one.sqmean()[c], kMergeRelTolerance);
  }
  EXPECT_THROW(a.merge(ChannelStats(cols + 1)), std::exception);
}

}  // namespace
}  // namespace fsq
