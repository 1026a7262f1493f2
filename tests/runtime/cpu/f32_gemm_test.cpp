// The oneDNN-backed f32 GEMMs (runtime/cpu/f32_gemm.h) against double-precision sums, on
// shapes around vector and block widths with padded strides, and their argument checks.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <random>
#include <vector>

#include "runtime/cpu/f32_gemm.h"

namespace fsq {
namespace {

using cpu::KernelStatus;

std::vector<float> random_matrix(int64_t rows, int64_t stride, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> m(static_cast<size_t>(rows * stride));
  for (float& v : m) v = normal(rng);
  return m;
}

// A float dot product of K terms is within about K * eps of its magnitude (sum |a b|), in any
// summation order.
double tolerance(int64_t k, double magnitude) { return static_cast<double>(k + 2) * FLT_EPSILON * magnitude; }

TEST(F32Gemm, XTimesWTransposedMatchesDoubleSums) {
  for (int64_t m : {1, 7, 64, 130})
    for (int64_t rows : {1, 17, 96})
      for (int64_t cols : {1, 15, 64, 577}) {
        const int64_t xs = cols + 3, ws = cols + 5, ys = rows + 2;
        const std::vector<float> x = random_matrix(m, xs, 1), w = random_matrix(rows, ws, 2);
        std::vector<float> y(static_cast<size_t>(m * ys), -7.0f);
        ASSERT_EQ(cpu::f32_gemm_xwt(x.data(), m, cols, xs, w.data(), rows, ws, y.data(), ys), KernelStatus::Ok);
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t n = 0; n < rows; ++n) {
            double want = 0, magnitude = 0;
            for (int64_t k = 0; k < cols; ++k) {
              const double p = static_cast<double>(x[i * xs + k]) * w[n * ws + k];
              want += p;
              magnitude += std::fabs(p);
            }
            ASSERT_NEAR(y[i * ys + n], want, tolerance(cols, magnitude)) << m << "x" << rows << "x" << cols;
          }
          for (int64_t n = rows; n < ys; ++n) ASSERT_EQ(y[i * ys + n], -7.0f) << "stride gap written";
        }
      }
}

TEST(F32Gemm, ATimesBMatchesDoubleSums) {
  for (int64_t m : {1, 9, 100})
    for (int64_t inner : {1, 33, 300})
      for (int64_t n : {1, 16, 70}) {
        const int64_t as = inner + 1, bs = n + 4, ys = n + 3;
        const std::vector<float> a = random_matrix(m, as, 3), b = random_matrix(inner, bs, 4);
        std::vector<float> y(static_cast<size_t>(m * ys), -7.0f);
        ASSERT_EQ(cpu::f32_gemm_ab(a.data(), m, inner, as, b.data(), n, bs, y.data(), ys), KernelStatus::Ok);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double want = 0, magnitude = 0;
            for (int64_t k = 0; k < inner; ++k) {
              const double p = static_cast<double>(a[i * as + k]) * b[k * bs + j];
              want += p;
              magnitude += std::fabs(p);
            }
            ASSERT_NEAR(y[i * ys + j], want, tolerance(inner, magnitude)) << m << "x" << inner << "x" << n;
          }
      }
}

TEST(F32Gemm, RefusesBadArguments) {
  std::vector<float> buf(64, 1.0f);
  EXPECT_EQ(cpu::f32_gemm_xwt(nullptr, 2, 4, 4, buf.data(), 2, 4, buf.data(), 2), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::f32_gemm_xwt(buf.data(), 0, 4, 4, buf.data(), 2, 4, buf.data(), 2), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::f32_gemm_xwt(buf.data(), 2, 4, 3, buf.data(), 2, 4, buf.data(), 2), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::f32_gemm_ab(buf.data(), 2, 4, 4, buf.data(), 3, 2, buf.data(), 3), KernelStatus::InvalidArgument);
}

}  // namespace
}  // namespace fsq
