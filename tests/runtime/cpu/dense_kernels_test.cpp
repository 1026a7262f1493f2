// The dense f32 GEMV of the decode fast path (runtime/cpu/dense_kernels.h) against its
// double-precision reference on odd shapes, every batch size and every ISA, with strided,
// NaN-padded inputs and guarded outputs; the bf16/f16 GEMV against the f32 one on the
// widened matrix (the same bits).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "common/half.h"
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

// A matrix rounded to bf16 or f16 (the stride gap holds NaN), and the same values as f32.
struct Dense16Matrix {
  std::vector<uint16_t> w;
  std::vector<float> wide;  // [rows, cols], contiguous
  int64_t rows, cols, stride;
  cpu::HalfFormat format;
  Dense16Matrix(int64_t r, int64_t c, cpu::HalfFormat f, uint32_t seed) : rows(r), cols(c), stride(c + 5), format(f) {
    const bool bf16 = f == cpu::HalfFormat::BF16;
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.5f);
    w.assign(static_cast<size_t>(rows * stride), bf16 ? uint16_t{0x7fc0} : uint16_t{0x7e00});
    wide.resize(static_cast<size_t>(rows * cols));
    for (int64_t n = 0; n < rows; ++n)
      for (int64_t k = 0; k < cols; ++k) {
        const float v = normal(rng);
        const uint16_t h = bf16 ? f32_to_bf16(v) : f32_to_f16(v);
        w[static_cast<size_t>(n * stride + k)] = h;
        wide[static_cast<size_t>(n * cols + k)] = bf16 ? bf16_to_f32(h) : f16_to_f32(h);
      }
  }
  cpu::Dense16WeightsView view() const { return {w.data(), rows, cols, stride, format}; }
  cpu::DenseWeightsView wide_view() const { return {wide.data(), rows, cols, cols}; }
};

TEST(DenseKernels, SixteenBitWeightsGiveTheF32KernelsBitsOnTheWidenedMatrix) {
  for (cpu::HalfFormat format : {cpu::HalfFormat::BF16, cpu::HalfFormat::F16})
    for (int64_t cols : kCols)
      for (int64_t rows : kRows) {
        const Dense16Matrix w(rows, cols, format, 13);
        const int64_t max_m = cpu::kMaxGemvRows + 1, x_stride = cols + test::kXPadding;
        const std::vector<float> x = test::activations(max_m, cols, x_stride, 7);
        std::vector<float> ref(static_cast<size_t>(max_m * rows)), wide_ref(ref.size());
        ASSERT_EQ(cpu::dense16_matmul_reference(w.view(), x.data(), max_m, x_stride, ref.data(), rows), KernelStatus::Ok);
        ASSERT_EQ(cpu::dense_matmul_reference(w.wide_view(), x.data(), max_m, x_stride, wide_ref.data(), rows),
                  KernelStatus::Ok);
        ASSERT_EQ(ref, wide_ref);
        std::vector<float> block(static_cast<size_t>(rows * cols));
        ASSERT_EQ(cpu::widen_dense16_rows(w.view(), 0, rows, block.data()), KernelStatus::Ok);
        ASSERT_EQ(block, w.wide);
        for (CpuIsa isa : test::supported_isas())
          for (int64_t m = 1; m <= max_m; ++m) {
            SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + " " + cpu::cpu_isa_name(isa) +
                         (format == cpu::HalfFormat::BF16 ? " bf16" : " f16") + " m=" + std::to_string(m));
            test::GuardedOutput y(m, rows, rows + test::kYPadding), y_wide(m, rows, rows + test::kYPadding);
            ASSERT_EQ(cpu::dense16_gemv(w.view(), x.data(), m, x_stride, y.data(), y.stride(), isa), KernelStatus::Ok);
            ASSERT_EQ(cpu::dense_gemv(w.wide_view(), x.data(), m, x_stride, y_wide.data(), y_wide.stride(), isa),
                      KernelStatus::Ok);
            ASSERT_TRUE(y.guards_intact());
            for (int64_t i = 0; i < m; ++i)
              for (int64_t n = 0; n < rows; ++n) ASSERT_EQ(y.at(i, n), y_wide.at(i, n)) << "row " << i << " output " << n;
          }
      }
}

TEST(DenseKernels, WidenRowsTakesABlockAndRejectsRowsOutOfRange) {
  const Dense16Matrix w(9, 33, cpu::HalfFormat::F16, 3);
  std::vector<float> block(static_cast<size_t>(4 * 33));
  ASSERT_EQ(cpu::widen_dense16_rows(w.view(), 5, 4, block.data()), KernelStatus::Ok);
  EXPECT_TRUE(std::equal(block.begin(), block.end(), w.wide.begin() + 5 * 33));
  EXPECT_EQ(cpu::widen_dense16_rows(w.view(), 6, 4, block.data()), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::widen_dense16_rows(w.view(), -1, 1, block.data()), KernelStatus::InvalidArgument);
  std::vector<float> x(33, 1.0f), y(9);
  const CpuIsa isa = cpu::best_cpu_isa();
  cpu::Dense16WeightsView short_stride = w.view();
  short_stride.row_stride = 32;
  EXPECT_EQ(cpu::dense16_gemv(short_stride, x.data(), 1, 33, y.data(), 9, isa), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::dense16_gemv(w.view(), x.data(), 1, 33, y.data(), 8, isa), KernelStatus::InvalidArgument);
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
