// The uniform CPU kernels against their spec: the scalar reference equals dequantize_uniform
// followed by a double matmul, and every ISA variant of the GEMV and of the row dequantizer
// matches the reference on every quant type and on shapes with partial vectors, without
// writing outside its output.
#include <gtest/gtest.h>

#include <cstdlib>

#include "common/error.h"
#include "uniform_test_support.h"

namespace fsq {
namespace {

using cpu::CpuIsa;
using cpu::KernelStatus;
using test::GuardedOutput;
using test::PackedWeights;

const int64_t kGemvRowCounts[] = {1, 7, 129};

// Each registered quant type paired with every test K its group size divides.
template <typename Fn>
void for_each_type_and_k(int bits, const Fn& fn) {
  for (const UniformQuantType& t : uniform_quant_types()) {
    if (t.quant.bits != bits) continue;
    for (const test::KGroup& kg : test::test_k_groups())
      if (kg.group_size == t.quant.group_size) fn(t.quant, kg.cols);
  }
}

class UniformKernelsByBits : public ::testing::TestWithParam<int> {};

TEST_P(UniformKernelsByBits, ReferenceIsDequantizeUniformThenDoubleMatmul) {
  // Same float weights, same products, same double summation order: bit-equal results.
  for_each_type_and_k(GetParam(), [&](const UniformQuant& q, int64_t cols) {
    const int64_t rows = 7, m = 3, x_stride = cols + test::kXPadding;
    const PackedWeights w(q, rows, cols, 11);
    SCOPED_TRACE(test::quant_label(q, rows, cols));
    const std::vector<float> x = test::activations(m, cols, x_stride, 5);
    GuardedOutput y(m, rows, rows + test::kYPadding);
    ASSERT_EQ(cpu::uniform_matmul_reference(w.view(), x.data(), m, x_stride, y.data(), y.stride()),
              KernelStatus::Ok);
    const std::vector<double> want = test::naive_matmul(w.dequantized(), rows, cols, x.data(), m, x_stride);
    const std::vector<float> got = y.dense();
    for (size_t j = 0; j < want.size(); ++j) ASSERT_EQ(got[j], static_cast<float>(want[j])) << "output " << j;
    EXPECT_TRUE(y.guards_intact());
  });
}

TEST_P(UniformKernelsByBits, GemvMatchesReferenceOnEveryIsa) {
  for_each_type_and_k(GetParam(), [&](const UniformQuant& q, int64_t cols) {
    for (int64_t rows : kGemvRowCounts) {
      const PackedWeights w(q, rows, cols, 23);
      const int64_t x_stride = cols + test::kXPadding, max_m = cpu::kMaxGemvRows;
      const std::vector<float> x = test::activations(max_m, cols, x_stride, 7);
      std::vector<float> ref(static_cast<size_t>(max_m * rows));
      ASSERT_EQ(cpu::uniform_matmul_reference(w.view(), x.data(), max_m, x_stride, ref.data(), rows),
                KernelStatus::Ok);
      for (CpuIsa isa : test::supported_isas()) {
        for (int64_t m = 1; m <= max_m; ++m) {
          SCOPED_TRACE(test::quant_label(q, rows, cols) + " " + cpu::cpu_isa_name(isa) + " m=" + std::to_string(m));
          GuardedOutput y(m, rows, rows + test::kYPadding);
          ASSERT_EQ(cpu::uniform_gemv(w.view(), x.data(), m, x_stride, y.data(), y.stride(), isa), KernelStatus::Ok);
          // Over the whole [m, rows] output: a single near-zero output (rows = 1) would
          // make a per-row NMSE a relative error of one cancelling sum.
          ASSERT_TRUE(test::nmse_within(y.dense().data(), ref.data(), m * rows, test::kKernelNmse));
          ASSERT_TRUE(y.guards_intact());
        }
      }
    }
  });
}

TEST_P(UniformKernelsByBits, DequantizeRowsIsBitExactOnEveryIsa) {
  for_each_type_and_k(GetParam(), [&](const UniformQuant& q, int64_t cols) {
    const int64_t rows = 9, row0 = 2, nrows = 5;  // an inner block of rows
    const PackedWeights w(q, rows, cols, 31);
    const std::vector<float> want = w.dequantized();
    for (CpuIsa isa : test::supported_isas()) {
      SCOPED_TRACE(test::quant_label(q, rows, cols) + " " + cpu::cpu_isa_name(isa));
      GuardedOutput out(nrows, cols, cols);
      ASSERT_EQ(cpu::uniform_dequantize_rows(w.view(), row0, nrows, out.data(), isa), KernelStatus::Ok);
      const std::vector<float> got = out.dense();
      ASSERT_EQ(0, std::memcmp(got.data(), &want[static_cast<size_t>(row0 * cols)], got.size() * sizeof(float)));
      ASSERT_TRUE(out.guards_intact());
    }
  });
}

TEST(UniformKernels, GemvTakesMoreRowsThanOneBatch) {
  // 19 rows of x: batches of 8, 8 and 3 rows, each written at its own place in y.
  const int64_t rows = 33, cols = 576, m = 2 * cpu::kMaxGemvRows + 3, x_stride = cols + test::kXPadding;
  const PackedWeights w(find_uniform_quant("w4g64a"), rows, cols, 37);
  const std::vector<float> x = test::activations(m, cols, x_stride, 19);
  std::vector<float> ref(static_cast<size_t>(m * rows));
  ASSERT_EQ(cpu::uniform_matmul_reference(w.view(), x.data(), m, x_stride, ref.data(), rows), KernelStatus::Ok);
  for (CpuIsa isa : test::supported_isas()) {
    SCOPED_TRACE(cpu::cpu_isa_name(isa));
    GuardedOutput y(m, rows, rows + test::kYPadding);
    ASSERT_EQ(cpu::uniform_gemv(w.view(), x.data(), m, x_stride, y.data(), y.stride(), isa), KernelStatus::Ok);
    EXPECT_TRUE(test::nmse_within(y.dense().data(), ref.data(), m * rows, test::kKernelNmse));
    EXPECT_TRUE(y.guards_intact());
  }
}

INSTANTIATE_TEST_SUITE_P(Bits, UniformKernelsByBits, ::testing::Values(2, 3, 4, 8),
                         [](const ::testing::TestParamInfo<int>& p) { return "w" + std::to_string(p.param); });

TEST(UniformKernels, RejectInvalidArguments) {
  const PackedWeights w(find_uniform_quant("w4g32a"), 4, 64, 3);
  const std::vector<float> x(64, 1.0f);
  std::vector<float> y(16), out(4 * 64);
  const CpuIsa isa = cpu::best_cpu_isa();
  EXPECT_EQ(cpu::uniform_gemv(w.view(), x.data(), 1, 64, y.data(), 4, isa), KernelStatus::Ok);
  EXPECT_EQ(cpu::uniform_gemv(w.view(), x.data(), 1, 63, y.data(), 4, isa), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::uniform_gemv(w.view(), x.data(), 2, 64, y.data(), 3, isa), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::uniform_gemv(w.view(), nullptr, 1, 64, y.data(), 4, isa), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::uniform_matmul_reference(w.view(), x.data(), 1, 64, nullptr, 4), KernelStatus::InvalidArgument);
  cpu::UniformWeightsView bad = w.view();
  bad.words_per_row += 1;
  EXPECT_EQ(cpu::check_uniform_view(bad), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::uniform_gemv(bad, x.data(), 1, 64, y.data(), 4, isa), KernelStatus::InvalidArgument);
  bad = w.view();
  bad.bits = 5;
  EXPECT_EQ(cpu::check_uniform_view(bad), KernelStatus::InvalidArgument);
  bad = w.view();
  bad.group_cols = 48;  // does not divide 64 columns
  EXPECT_EQ(cpu::check_uniform_view(bad), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::uniform_dequantize_rows(w.view(), 3, 2, out.data(), isa), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::uniform_dequantize_rows(w.view(), 0, 4, out.data(), isa), KernelStatus::Ok);
}

TEST(CpuIsa, NamesParseAndTheBestIsSupported) {
  for (CpuIsa isa : {CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx512}) {
    CpuIsa parsed{};
    ASSERT_TRUE(cpu::parse_cpu_isa(cpu::cpu_isa_name(isa), &parsed));
    EXPECT_EQ(parsed, isa);
  }
  CpuIsa unused{};
  EXPECT_FALSE(cpu::parse_cpu_isa("sse2", &unused));
  EXPECT_TRUE(cpu::cpu_supports(CpuIsa::Scalar));
  EXPECT_TRUE(cpu::cpu_supports(cpu::best_cpu_isa()));
}

TEST(CpuIsa, EnvironmentOverride) {
  const char* saved = std::getenv("FSQ_CPU_ISA");
  const std::string restore = saved ? saved : "";
  ::setenv("FSQ_CPU_ISA", "scalar", 1);
  EXPECT_EQ(cpu::selected_cpu_isa(), CpuIsa::Scalar);
  ::setenv("FSQ_CPU_ISA", "avx9000", 1);
  EXPECT_THROW(cpu::selected_cpu_isa(), Error);
  ::unsetenv("FSQ_CPU_ISA");
  EXPECT_EQ(cpu::selected_cpu_isa(), cpu::best_cpu_isa());
  if (saved) ::setenv("FSQ_CPU_ISA", restore.c_str(), 1);
}

}  // namespace
}  // namespace fsq
