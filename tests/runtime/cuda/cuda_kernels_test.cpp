// CUDA kernels against their scalar references; skipped where no GPU is visible (CI).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "runtime/cuda/cuda_backend.h"

namespace fsq {
namespace {

constexpr double kRmsNormTolerance = 1e-5;  // fp32 kernel vs fp32 reference (double sum)

TEST(CudaBackend, DescribeIsAlwaysAvailable) { EXPECT_FALSE(cuda::describe().empty()); }

TEST(CudaBackend, RmsNormMatchesReference) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no GPU: " << cuda::describe();
  const int rows = 7, cols = 1000;  // odd sizes: not multiples of the block size
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.f, 2.f);
  std::vector<float> x(rows * cols), w(cols), ref(rows * cols), got(rows * cols + 1, -777.f);
  for (float& v : x) v = normal(rng);
  for (float& v : w) v = 1.f + 0.1f * normal(rng);
  cuda::rms_norm_reference(x.data(), w.data(), ref.data(), rows, cols, 1e-5f);
  void *dx = nullptr, *dw = nullptr, *dy = nullptr;
  ASSERT_EQ(cuda::copy_to_device(&dx, x.data(), x.size() * 4), "");
  ASSERT_EQ(cuda::copy_to_device(&dw, w.data(), w.size() * 4), "");
  ASSERT_EQ(cuda::copy_to_device(&dy, got.data(), x.size() * 4), "");
  ASSERT_EQ(cuda::rms_norm_f32(static_cast<float*>(dx), static_cast<float*>(dw), static_cast<float*>(dy), rows, cols,
                               1e-5f),
            "");
  ASSERT_EQ(cuda::copy_to_host(got.data(), dy, x.size() * 4), "");
  for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(got[i], ref[i], kRmsNormTolerance * (1 + std::abs(ref[i])));
  EXPECT_EQ(got.back(), -777.f);  // sentinel past the output untouched
  cuda::free_device(dx);
  cuda::free_device(dw);
  cuda::free_device(dy);
}

}  // namespace
}  // namespace fsq
