// The dense f32 GEMV of the decode fast path (runtime/cpu/dense_kernels.h) against its
// double-precision reference on odd shapes, every batch size and every ISA, with strided,
// NaN-padded inputs and guarded outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "float_bounds.h"
#include "runtime/cpu/dense_kernels.h"
#include "uniform_test_support.h"

namespace fsq {
namespace {

using cpu::CpuIsa;
using cpu::KernelStatus;

struct DenseMatrix {
  std::vector<float> w;
  int64_t rows, cols, stride;
  DenseMatrix(int64_t r, int64_t c, uint32_t seed) : rows(r), cols(c), stride(c + 3) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.5f);
    w.assign(static_cast<size_t>(rows * stride), std::nanf(""));  // the stride gap is NaN
    for (int64_t n = 0; n < rows; ++n)
      for (int64_t k = 0; k < cols; ++k) w[static_cast<size_t>(n * stride + k)] = normal(rng);
  }
  cpu::DenseWeightsView view() const { return {w.data(), rows, cols, stride}; }
};

// Columns around the vector widths (8, 16, two of each per step) and model widths.
const int64_t kCols[] = {1, 7, 16, 31, 32, 33, 64, 100, 576};
const int64_t kRows[] = {1, 5, 17, 64, 129};

TEST(DenseKernels, GemvMatchesTheReferenceWithinTheF32SumBound) {
  for (int64_t cols : kCols)
    for (int64_t rows : kRows) {
      const DenseMatrix w(rows, cols, 11);
      const int64_t max_m = cpu::kMaxGemvRows + 1, x_stride = cols + test::kXPadding;  // 9: two batches
      const std::vector<float> x = test::activations(max_m, cols, x_stride, 5);
      std::vector<float> ref(static_cast<size_t>(max_m * rows));
      ASSERT_EQ(cpu::dense_matmul_reference(w.view(), x.data(), max_m, x_stride, ref.data(), rows), KernelStatus::Ok);
      for (CpuIsa isa : test::supported_isas())
        for (int64_t m = 1; m <= max_m; ++m) {
          SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + " " + cpu::cpu_isa_name(isa) +
                       " m=" + std::to_string(m));
          test::GuardedOutput y(m, rows, rows + test::kYPadding);
          ASSERT_EQ(cpu::dense_gemv(w.view(), x.data(), m, x_stride, y.data(), y.stride(), isa), KernelStatus::Ok);
          ASSERT_TRUE(y.guards_intact());
          for (int64_t i = 0; i < m; ++i)
            for (int64_t n = 0; n < rows; ++n) {
              double magnitude = 0.0;  // sum |x w|: what the rounding of a length-cols sum scales with
              for (int64_t k = 0; k < cols; ++k)
                magnitude += std::abs(static_cast<double>(x[i * x_stride + k]) * w.w[n * w.stride + k]);
              const double ref_value = ref[static_cast<size_t>(i * rows + n)];
              // The kernel's float sum, plus the reference's own final rounding.
              const double bound = testing::f32_chain_bound(1, cols + 1) * magnitude +
                                   testing::kF32UnitRoundoff * std::abs(ref_value);
              ASSERT_LE(std::abs(y.at(i, n) - ref_value), bound) << "row " << i << " output " << n;
            }
        }
    }
}

TEST(DenseKernels, RejectInvalidArguments) {
  const DenseMatrix w(4, 8, 1);
  std::vector<float> x(16, 1.0f), y(16);
  const CpuIsa isa = cpu::best_cpu_isa();
  EXPECT_EQ(cpu::dense_gemv({nullptr, 4, 8, 8}, x.data(), 1, 8, y.data(), 4, isa), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::dense_gemv({w.w.data(), 4, 8, 7}, x.data(), 1, 8, y.data(), 4, isa), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::dense_gemv(w.view(), x.data(), 1, 7, y.data(), 4, isa), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::dense_gemv(w.view(), x.data(), 1, 8, y.data(), 3, isa), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::dense_gemv(w.view(), nullptr, 1, 8, y.data(), 4, isa), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::dense_gemv(w.view(), x.data(), -1, 8, y.data(), 4, isa), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::dense_gemv(w.view(), nullptr, 0, 8, nullptr, 4, isa), KernelStatus::Ok);  // nothing to do
}

}  // namespace
}  // namespace fsq
