// The W4A4 GEMV (runtime/cpu/w4a4_kernels.h): the per-token 4-bit quantizer on hand-computed
// rows, the scalar spec against dequantized weights times dequantized activations, every
// SIMD kernel against the spec (DESIGN.md's kernel NMSE, guard sentinels, odd shapes, 1-8
// rows), and the fused q/k/v form bit for bit against one matrix at a time.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/cpu/w4a4_kernels.h"
#include "uniform_test_support.h"

namespace fsq {
namespace {

using cpu::CpuIsa;
using cpu::KernelStatus;
using test::GuardedOutput;
using test::PackedWeights;

struct A4Row {
  std::vector<int8_t> q;
  std::vector<float> d;
};
A4Row quantize(const float* x, int64_t cols) {
  A4Row r{std::vector<int8_t>(static_cast<size_t>(cols)), std::vector<float>(static_cast<size_t>(cpu::q8_block_count(cols)))};
  cpu::quantize_a4_row(x, cols, r.q.data(), r.d.data());
  return r;
}

TEST(W4A4, QuantizeRowIsPerTokenSymmetricRoundToEven) {
  std::vector<float> x(40, 0.0f);
  x[0] = 7.0f;    // the max: scale 1
  x[1] = -3.5f;   // -> -4 (to even)
  x[2] = 0.5f;    // -> 0
  x[3] = 1.5f;    // -> 2
  x[4] = 2.5f;    // -> 2
  x[39] = -7.0f;  // -7, in the second block of 32
  const A4Row r = quantize(x.data(), 40);
  ASSERT_EQ(r.d.size(), 2u);
  EXPECT_EQ(r.d[0], 1.0f);
  EXPECT_EQ(r.d[1], 1.0f);  // one scale per token, repeated per block
  const std::vector<int> want = {7, -4, 0, 2, 2};
  for (size_t k = 0; k < want.size(); ++k) EXPECT_EQ(r.q[k], want[k]) << "column " << k;
  EXPECT_EQ(r.q[39], -7);
  const std::vector<float> zeros(33, 0.0f);
  const A4Row z = quantize(zeros.data(), 33);
  EXPECT_EQ(z.d[0], 0.0f);
  for (int8_t q : z.q) EXPECT_EQ(q, 0);
  std::vector<float> bad(64, 1.0f);
  bad[50] = std::numeric_limits<float>::quiet_NaN();
  const A4Row n = quantize(bad.data(), 64);
  EXPECT_TRUE(std::isnan(n.d[0]) && std::isnan(n.d[1]));
  for (int8_t q : n.q) EXPECT_EQ(q, 0);
}

TEST(W4A4, NonFiniteActivationGivesNanOutputs) {
  std::vector<float> x(64, 1.0f);
  x[3] = std::numeric_limits<float>::infinity();
  const PackedWeights w(UniformQuant{4, 32, true}, 3, 64, 3);
  for (CpuIsa isa : test::supported_isas()) {
    ASSERT_TRUE(cpu::uniform_a4_supported(w.view(), isa));
    std::vector<float> y(3, 0.0f);
    ASSERT_EQ(cpu::uniform_gemv_a4(w.view(), x.data(), 1, 64, y.data(), 3, isa), KernelStatus::Ok);
    for (float v : y) EXPECT_TRUE(std::isnan(v)) << cpu::cpu_isa_name(isa);
  }
}

// The spec equals sum_k (s q[k]) w'[n, k] in double, w' the dequantized weights.
TEST(W4A4, ReferenceIsDequantizedWeightsTimesDequantizedActivations) {
  constexpr double kDoubleSumTolerance = 1e-12;  // relative to the sum of |terms|
  for (const UniformQuantType& t : uniform_quant_types()) {
    for (const test::KGroup& kg : test::test_k_groups()) {
      if (kg.group_size != t.quant.group_size) continue;
      const int64_t rows = 5, m = 2, cols = kg.cols, x_stride = cols + test::kXPadding;
      const PackedWeights w(t.quant, rows, cols, 13);
      SCOPED_TRACE(test::quant_label(t.quant, rows, cols));
      const std::vector<float> x = test::activations(m, cols, x_stride, 9);
      GuardedOutput y(m, rows, rows + test::kYPadding);
      ASSERT_EQ(cpu::uniform_gemv_a4_reference(w.view(), x.data(), m, x_stride, y.data(), y.stride()), KernelStatus::Ok);
      const std::vector<float> weights = w.dequantized(), got = y.dense();
      for (int64_t i = 0; i < m; ++i) {
        const A4Row r = quantize(x.data() + i * x_stride, cols);
        for (int64_t n = 0; n < rows; ++n) {
          double want = 0.0, magnitude = 0.0;
          for (int64_t k = 0; k < cols; ++k) {
            const double term = static_cast<double>(r.q[static_cast<size_t>(k)]) * r.d[0] *
                                weights[static_cast<size_t>(n * cols + k)];
            want += term;
            magnitude += std::fabs(term);
          }
          const double tolerance =
              kDoubleSumTolerance * magnitude + std::fabs(want) * std::numeric_limits<float>::epsilon();
          ASSERT_NEAR(got[static_cast<size_t>(i * rows + n)], want, tolerance) << "row " << i << " output " << n;
        }
      }
      EXPECT_TRUE(y.guards_intact());
    }
  }
}

TEST(W4A4, KernelsMatchTheSpecOnEverySupportedTypeAndIsa) {
  int runs = 0;
  for (const UniformQuantType& t : uniform_quant_types()) {
    for (const test::KGroup& kg : test::test_k_groups()) {
      if (kg.group_size != t.quant.group_size) continue;
      for (int64_t rows : {1, 7, 129}) {
        const int64_t cols = kg.cols, x_stride = cols + test::kXPadding, max_m = cpu::kMaxGemvRows;
        const PackedWeights w(t.quant, rows, cols, 29);
        const std::vector<float> x = test::activations(max_m, cols, x_stride, 17);
        std::vector<float> ref(static_cast<size_t>(max_m * rows));
        ASSERT_EQ(cpu::uniform_gemv_a4_reference(w.view(), x.data(), max_m, x_stride, ref.data(), rows),
                  KernelStatus::Ok);
        for (CpuIsa isa : test::supported_isas()) {
          if (!cpu::uniform_a4_supported(w.view(), isa)) {
            EXPECT_NE(cpu::uniform_gemv_a4(w.view(), x.data(), 1, x_stride, ref.data(), rows, isa), KernelStatus::Ok);
            continue;
          }
          for (int64_t m = 1; m <= max_m; ++m) {
            SCOPED_TRACE(test::quant_label(t.quant, rows, cols) + " " + cpu::cpu_isa_name(isa) + " m=" +
                         std::to_string(m));
            GuardedOutput y(m, rows, rows + test::kYPadding);
            ASSERT_EQ(cpu::uniform_gemv_a4(w.view(), x.data(), m, x_stride, y.data(), y.stride(), isa), KernelStatus::Ok);
            ASSERT_TRUE(test::nmse_within(y.dense().data(), ref.data(), m * rows, test::kKernelNmse));
            ASSERT_TRUE(y.guards_intact());
            ++runs;
          }
        }
      }
    }
  }
  EXPECT_GT(runs, 0);
  RecordProperty("kernel_runs", runs);
}

// q/k/v in one pass give each matrix's single-call outputs bit for bit.
TEST(W4A4, TogetherEqualsOneAtATimeBitForBit) {
  const int64_t cols = 576, m = 3;
  const UniformQuant q{4, 32, true};
  const PackedWeights a(q, 576, cols, 1), b(q, 192, cols, 2), c(q, 100, cols, 3);
  const std::vector<float> x = test::activations(m, cols, cols, 5);
  for (CpuIsa isa : test::supported_isas()) {
    if (isa == CpuIsa::Scalar || !cpu::uniform_a4_supported(a.view(), isa)) continue;
    const cpu::UniformWeightsView views[3] = {a.view(), b.view(), c.view()};
    std::vector<float> together[3], single[3];
    cpu::Q8GemvOutput outs[3];
    for (int j = 0; j < 3; ++j) {
      together[j].assign(static_cast<size_t>(m * views[j].rows), 0.0f);
      single[j].assign(static_cast<size_t>(m * views[j].rows), 1.0f);
      outs[j] = {&views[j], together[j].data(), views[j].rows};
      ASSERT_EQ(cpu::uniform_gemv_a4(views[j], x.data(), m, cols, single[j].data(), views[j].rows, isa), KernelStatus::Ok);
    }
    ASSERT_EQ(cpu::uniform_gemv_a4_together(outs, 3, x.data(), m, cols, isa), KernelStatus::Ok);
    for (int j = 0; j < 3; ++j)
      EXPECT_EQ(std::memcmp(together[j].data(), single[j].data(), together[j].size() * sizeof(float)), 0)
          << cpu::cpu_isa_name(isa) << " matrix " << j;
  }
}

// The scalar dispatch is the spec itself.
TEST(W4A4, ScalarIsaRunsTheReference) {
  const PackedWeights w(UniformQuant{4, 32, false}, 9, 96, 4);
  const std::vector<float> x = test::activations(2, 96, 96, 6);
  std::vector<float> ref(18), got(18);
  ASSERT_EQ(cpu::uniform_gemv_a4_reference(w.view(), x.data(), 2, 96, ref.data(), 9), KernelStatus::Ok);
  ASSERT_EQ(cpu::uniform_gemv_a4(w.view(), x.data(), 2, 96, got.data(), 9, CpuIsa::Scalar), KernelStatus::Ok);
  EXPECT_EQ(std::memcmp(ref.data(), got.data(), ref.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace fsq
