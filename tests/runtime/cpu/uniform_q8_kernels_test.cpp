// The int8-activation uniform GEMV (runtime/cpu/uniform_q8_kernels.h): the activation
// quantizer on hand-computed blocks, the scalar spec against dequantized weights times
// dequantized activations, and every SIMD kernel against the spec on every 3-, 4- and 8-bit
// type and test width, with guard sentinels around the output.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "common/half.h"
#include "runtime/cpu/int8_kernels.h"  // cpu_has_avx512_vnni
#include "runtime/cpu/uniform_q8_isa.h"
#include "runtime/cpu/uniform_q8_kernels.h"
#include "uniform_test_support.h"

namespace fsq {
namespace {

using cpu::CpuIsa;
using cpu::KernelStatus;
using test::GuardedOutput;
using test::PackedWeights;

constexpr double kFloatEps = std::numeric_limits<float>::epsilon();

struct QuantizedRow {
  std::vector<int8_t> q;
  std::vector<float> d;
};
QuantizedRow quantize_row(const float* x, int64_t cols) {
  QuantizedRow r{std::vector<int8_t>(static_cast<size_t>(cols)),
                 std::vector<float>(static_cast<size_t>((cols + cpu::kQ8BlockCols - 1) / cpu::kQ8BlockCols))};
  cpu::quantize_q8_row(x, cols, r.q.data(), r.d.data());
  return r;
}

TEST(UniformQ8, QuantizeRowRoundsToNearestEvenPerBlockOf32) {
  // Block 0: max |x| = 63.5, so d = 0.5 and x / d is exact; block 1 is zero; block 2 (3
  // columns) has max 127 * 3.
  std::vector<float> x(67, 0.0f);
  x[0] = 63.5f;    // 127
  x[1] = -0.25f;   // -0.5 -> -0 (to even)
  x[2] = 0.75f;    // 1.5 -> 2
  x[3] = -1.25f;   // -2.5 -> -2
  x[31] = -63.5f;  // -127
  x[64] = 381.0f;  // 127
  x[65] = 4.5f;    // 1.5 -> 2
  x[66] = -7.5f;   // -2.5 -> -2
  const QuantizedRow r = quantize_row(x.data(), 67);
  ASSERT_EQ(r.d.size(), 3u);
  EXPECT_EQ(r.d[0], 63.5f / 127.0f);
  EXPECT_EQ(r.d[1], 0.0f);
  EXPECT_EQ(r.d[2], 3.0f);
  const std::vector<int> want = {127, 0, 2, -2};
  for (size_t k = 0; k < want.size(); ++k) EXPECT_EQ(r.q[k], want[k]) << "column " << k;
  EXPECT_EQ(r.q[31], -127);
  for (int k = 32; k < 64; ++k) EXPECT_EQ(r.q[static_cast<size_t>(k)], 0);
  EXPECT_EQ(r.q[64], 127);
  EXPECT_EQ(r.q[65], 2);
  EXPECT_EQ(r.q[66], -2);
}

// The AVX-512 quantizer gives the spec's codes and scales bit for bit: rows of every length
// around the block and vector widths, with zeros, tiny, huge and non-finite values.
TEST(UniformQ8, VectorQuantizerEqualsTheSpecBitForBit) {
  if (!cpu::cpu_has_avx512_vnni()) GTEST_SKIP() << "this CPU has no AVX-512 VNNI";
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const float specials[] = {0.0f, -0.0f, 1e-40f, 3e38f, std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), 0.5f, -126.5f};
  for (int64_t cols : {1, 15, 16, 17, 31, 32, 33, 48, 64, 100, 576}) {
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<float> x(static_cast<size_t>(cols));
      for (float& v : x) v = normal(rng) * (trial % 3 == 0 ? 1e-3f : 10.0f);
      if (trial % 4 == 1) x[static_cast<size_t>(trial) % x.size()] = specials[trial % 8];
      if (trial % 5 == 2) std::fill(x.begin(), x.begin() + std::min<int64_t>(cols, 32), 0.0f);
      const int64_t blocks = (cols + cpu::kQ8BlockCols - 1) / cpu::kQ8BlockCols;
      std::vector<int8_t> q_spec(x.size()), q_vec(x.size());
      std::vector<float> d_spec(static_cast<size_t>(blocks)), d_vec(static_cast<size_t>(blocks));
      cpu::quantize_q8_row(x.data(), cols, q_spec.data(), d_spec.data());
      cpu::quantize_q8_row_avx512(x.data(), cols, q_vec.data(), d_vec.data());
      ASSERT_EQ(q_spec, q_vec) << "cols " << cols << " trial " << trial;
      ASSERT_EQ(std::memcmp(d_spec.data(), d_vec.data(), d_spec.size() * sizeof(float)), 0)
          << "cols " << cols << " trial " << trial;
    }
  }
}

TEST(UniformQ8, NonFiniteActivationGivesNanOutputs) {
  std::vector<float> x(64, 1.0f);
  x[40] = std::numeric_limits<float>::infinity();
  const QuantizedRow r = quantize_row(x.data(), 64);
  EXPECT_EQ(r.d[0], 1.0f / 127.0f);
  EXPECT_TRUE(std::isnan(r.d[1]));
  const PackedWeights w(UniformQuant{4, 32, false}, 3, 64, 3);
  for (CpuIsa isa : test::supported_isas()) {
    if (!cpu::uniform_q8_supported(w.view(), isa)) continue;
    std::vector<float> y(3, 0.0f);
    ASSERT_EQ(cpu::uniform_gemv_q8(w.view(), x.data(), 1, 64, y.data(), 3, isa), KernelStatus::Ok);
    for (float v : y) EXPECT_TRUE(std::isnan(v)) << cpu::cpu_isa_name(isa);
  }
}

// sum_k x'[k] * w'[n, k] in double with x' = q * d and w' = (code - zero) * scale: the same
// sum the spec groups by block; every product is exact in double up to one rounding.
TEST(UniformQ8, ReferenceIsDequantizedWeightsTimesDequantizedActivations) {
  for (const UniformQuantType& t : uniform_quant_types()) {
    for (const test::KGroup& kg : test::test_k_groups()) {
      if (kg.group_size != t.quant.group_size) continue;
      const int64_t rows = 5, m = 2, cols = kg.cols, x_stride = cols + test::kXPadding;
      const PackedWeights w(t.quant, rows, cols, 13);
      SCOPED_TRACE(test::quant_label(t.quant, rows, cols));
      const std::vector<float> x = test::activations(m, cols, x_stride, 9);
      GuardedOutput y(m, rows, rows + test::kYPadding);
      ASSERT_EQ(cpu::uniform_gemv_q8_reference(w.view(), x.data(), m, x_stride, y.data(), y.stride()),
                KernelStatus::Ok);
      const std::vector<float> weights = w.dequantized();
      const std::vector<float> got = y.dense();
      for (int64_t i = 0; i < m; ++i) {
        const QuantizedRow r = quantize_row(x.data() + i * x_stride, cols);
        for (int64_t n = 0; n < rows; ++n) {
          double want = 0.0, magnitude = 0.0;
          for (int64_t k = 0; k < cols; ++k) {
            const double term = static_cast<double>(r.q[static_cast<size_t>(k)]) *
                                r.d[static_cast<size_t>(k / cpu::kQ8BlockCols)] *
                                weights[static_cast<size_t>(n * cols + k)];
            want += term;
            magnitude += std::fabs(term);
          }
          // Both sums are exact to ~1e-15 relative per term; the float result rounds once.
          const double tolerance = 1e-12 * magnitude + std::fabs(want) * kFloatEps;
          ASSERT_NEAR(got[static_cast<size_t>(i * rows + n)], want, tolerance) << "row " << i << " output " << n;
        }
      }
      EXPECT_TRUE(y.guards_intact());
    }
  }
}

// The float error bound of the SIMD kernels for output n of row i: each term
// scale * d * code * q is rounded a few times (the lane scale product, the conversion, the
// multiply-add) and then summed along a chain of at most (chunks + groups) additions plus
// a 16-lane reduction; the zero points' part likewise. So |got - spec| <=
// (chunks + groups + 40) * eps * (sum of |terms| of both parts).
double kernel_tolerance(const PackedWeights& w, const QuantizedRow& r, int64_t n) {
  const cpu::UniformWeightsView v = w.view();
  const int64_t groups = v.cols / v.group_cols;
  double magnitude = 0.0;
  for (int64_t k = 0; k < v.cols; ++k) {
    const int64_t g = k / v.group_cols;
    const double scale = f16_to_f32(v.scales[n * groups + g]);
    const double zero = v.zeros ? v.zeros[n * groups + g] : 1 << (v.bits - 1);
    const double code = w.canonical.codes[static_cast<size_t>(n * v.cols + k)];
    magnitude += scale * r.d[static_cast<size_t>(k / cpu::kQ8BlockCols)] * (code + zero) *
                 std::fabs(static_cast<double>(r.q[static_cast<size_t>(k)]));
  }
  const int64_t chunks = v.cols / 64 + 1;
  return static_cast<double>(chunks + groups + 40) * kFloatEps * magnitude;
}

TEST(UniformQ8, SimdKernelsMatchTheSpecOnEverySupportedType) {
  int runs = 0;
  for (const UniformQuantType& t : uniform_quant_types()) {
    if (t.quant.bits != 3 && t.quant.bits != 4 && t.quant.bits != 8) continue;
    for (const test::KGroup& kg : test::test_k_groups()) {
      if (kg.group_size != t.quant.group_size) continue;
      for (int64_t rows : {1, 7, 129}) {
        const int64_t cols = kg.cols, x_stride = cols + test::kXPadding, max_m = cpu::kMaxGemvRows;
        const PackedWeights w(t.quant, rows, cols, 29);
        const std::vector<float> x = test::activations(max_m, cols, x_stride, 17);
        std::vector<float> ref(static_cast<size_t>(max_m * rows));
        ASSERT_EQ(cpu::uniform_gemv_q8_reference(w.view(), x.data(), max_m, x_stride, ref.data(), rows),
                  KernelStatus::Ok);
        std::vector<QuantizedRow> xq;
        for (int64_t i = 0; i < max_m; ++i) xq.push_back(quantize_row(x.data() + i * x_stride, cols));
        for (CpuIsa isa : test::supported_isas()) {
          if (!cpu::uniform_q8_supported(w.view(), isa)) {
            EXPECT_NE(cpu::uniform_gemv_q8(w.view(), x.data(), 1, x_stride, ref.data(), rows, isa), KernelStatus::Ok);
            continue;
          }
          for (int64_t m = 1; m <= max_m; ++m) {
            SCOPED_TRACE(test::quant_label(t.quant, rows, cols) + " " + cpu::cpu_isa_name(isa) + " m=" +
                         std::to_string(m));
            GuardedOutput y(m, rows, rows + test::kYPadding);
            ASSERT_EQ(cpu::uniform_gemv_q8(w.view(), x.data(), m, x_stride, y.data(), y.stride(), isa),
                      KernelStatus::Ok);
            const std::vector<float> got = y.dense();
            for (int64_t i = 0; i < m; ++i)
              for (int64_t n = 0; n < rows; ++n)
                ASSERT_NEAR(got[static_cast<size_t>(i * rows + n)], ref[static_cast<size_t>(i * rows + n)],
                            kernel_tolerance(w, xq[static_cast<size_t>(i)], n))
                    << "row " << i << " output " << n;
            ASSERT_TRUE(y.guards_intact());
            ++runs;
          }
        }
      }
    }
  }
  if (runs == 0) GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512 VNNI: no int8-activation kernel to test";
}

// The packed codes end right before an unreadable page: a kernel reading past the last
// row's codes (a whole-vector load of a row's partial last chunk, which other rows take from
// the next row's codes) crashes; it must give the same bits as from an ordinary buffer.
TEST(UniformQ8, ReadsNothingPastTheCodes) {
  int runs = 0;
  for (int bits : {3, 4, 8})
    for (const test::KGroup& kg : test::test_k_groups())
      for (int64_t rows : {int64_t{1}, int64_t{5}}) {
        const PackedWeights w(UniformQuant{bits, kg.group_size, false}, rows, kg.cols, 41);
        const test::BytesBeforeGuardPage words(w.words.data(), w.words.size() * sizeof(uint32_t));
        cpu::UniformWeightsView guarded = w.view();
        guarded.words = words.as<uint32_t>();
        const int64_t m = 2;
        const std::vector<float> x = test::activations(m, kg.cols, kg.cols, 5);
        for (CpuIsa isa : test::supported_isas()) {
          if (!cpu::uniform_q8_supported(w.view(), isa)) continue;
          SCOPED_TRACE(test::quant_label(w.canonical.quant, rows, kg.cols) + " " + cpu::cpu_isa_name(isa));
          std::vector<float> got(static_cast<size_t>(m * rows)), want(got.size());
          ASSERT_EQ(cpu::uniform_gemv_q8(guarded, x.data(), m, kg.cols, got.data(), rows, isa), KernelStatus::Ok);
          ASSERT_EQ(cpu::uniform_gemv_q8(w.view(), x.data(), m, kg.cols, want.data(), rows, isa), KernelStatus::Ok);
          EXPECT_EQ(got, want);
          ++runs;
        }
      }
  if (runs == 0) GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512 VNNI: no int8-activation kernel to test";
}

// Matrices run together (a layer's q/k/v) give each matrix's outputs bit for bit as its own
// call does, on 1 and 2 threads: row counts that are not multiples of the kernel's blocks
// of 4 rows or of the threads' 16 put each matrix's rows at odd places of the stacked range.
TEST(UniformQ8, GemvTogetherEqualsSeparateCallsBitForBit) {
  int runs = 0;
  const int threads_before = omp_get_max_threads();
  for (const UniformQuantType& t : uniform_quant_types()) {
    if (t.quant.bits != 3 && t.quant.bits != 4 && t.quant.bits != 8) continue;
    for (const test::KGroup& kg : test::test_k_groups()) {
      if (kg.group_size != t.quant.group_size || (kg.cols != 576 && kg.cols != 96)) continue;
      const int64_t cols = kg.cols, x_stride = cols + test::kXPadding, max_m = cpu::kMaxGemvRows;
      const PackedWeights a(t.quant, 37, cols, 3), b(t.quant, 6, cols, 5), c(t.quant, 129, cols, 7);
      const cpu::UniformWeightsView views[] = {a.view(), b.view(), c.view()};
      const std::vector<float> x = test::activations(max_m, cols, x_stride, 11);
      for (CpuIsa isa : test::supported_isas()) {
        if (!cpu::uniform_q8_supported(views[0], isa)) continue;
        for (int threads : {1, 2}) {
          omp_set_num_threads(threads);
          for (int64_t m : {int64_t{1}, int64_t{3}, max_m}) {
            SCOPED_TRACE(test::quant_label(t.quant, 37, cols) + " " + cpu::cpu_isa_name(isa) + " m=" +
                         std::to_string(m) + " threads=" + std::to_string(threads));
            std::vector<GuardedOutput> separate, together;
            cpu::Q8GemvOutput outputs[3];
            for (int j = 0; j < 3; ++j) {
              const int64_t rows = views[j].rows;
              separate.emplace_back(m, rows, rows + test::kYPadding);
              together.emplace_back(m, rows, rows + test::kYPadding);
            }
            for (int j = 0; j < 3; ++j) {
              ASSERT_EQ(cpu::uniform_gemv_q8(views[j], x.data(), m, x_stride, separate[j].data(), separate[j].stride(), isa),
                        KernelStatus::Ok);
              outputs[j] = {&views[j], together[j].data(), together[j].stride()};
            }
            ASSERT_EQ(cpu::uniform_gemv_q8_together(outputs, 3, x.data(), m, x_stride, isa), KernelStatus::Ok);
            for (int j = 0; j < 3; ++j) {
              const std::vector<float> want = separate[j].dense(), got = together[j].dense();
              ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0) << "matrix " << j;
              ASSERT_TRUE(together[j].guards_intact()) << "matrix " << j;
            }
            ++runs;
          }
        }
      }
    }
  }
  omp_set_num_threads(threads_before);
  if (runs == 0) GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512 VNNI: no int8-activation kernel to test";
}

TEST(UniformQ8, GemvTogetherRejectsMatricesOfDifferentLayouts) {
  const UniformQuant q = uniform_quant_types().front().quant;
  const PackedWeights a(q, 16, 96, 1), b(q, 16, 576, 2);
  const cpu::UniformWeightsView views[] = {a.view(), b.view()};
  std::vector<float> x = test::activations(1, 576, 576 + test::kXPadding, 3), y0(16), y1(16);
  const cpu::Q8GemvOutput outputs[] = {{&views[0], y0.data(), 16}, {&views[1], y1.data(), 16}};
  EXPECT_EQ(cpu::uniform_gemv_q8_together(outputs, 2, x.data(), 1, 576 + test::kXPadding, cpu::selected_cpu_isa()),
            KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::uniform_gemv_q8_together(outputs, 0, x.data(), 1, 576, cpu::selected_cpu_isa()),
            KernelStatus::InvalidArgument);
}

// The prefill GEMM computes the same spec for any number of rows of x: rows of x around
// its register tile of 6, weight rows around its tiles of 32, every type it takes.
TEST(UniformQ8, GemmMatchesTheSpecOnEverySupportedType) {
  int runs = 0;
  for (const UniformQuantType& t : uniform_quant_types()) {
    for (const test::KGroup& kg : test::test_k_groups()) {
      if (kg.group_size != t.quant.group_size) continue;
      for (int64_t rows : {1, 31, 33, 70}) {
        const int64_t cols = kg.cols, x_stride = cols + test::kXPadding, max_m = 13;
        const PackedWeights w(t.quant, rows, cols, 41);
        if (!cpu::uniform_gemm_q8_supported(w.view(), CpuIsa::Avx512)) continue;
        const std::vector<float> x = test::activations(max_m, cols, x_stride, 23);
        std::vector<float> ref(static_cast<size_t>(max_m * rows));
        ASSERT_EQ(cpu::uniform_gemv_q8_reference(w.view(), x.data(), max_m, x_stride, ref.data(), rows),
                  KernelStatus::Ok);
        for (int64_t m : {1, 5, 6, 7, 13}) {
          SCOPED_TRACE(test::quant_label(t.quant, rows, cols) + " m=" + std::to_string(m));
          GuardedOutput y(m, rows, rows + test::kYPadding);
          ASSERT_EQ(cpu::uniform_gemm_q8(w.view(), x.data(), m, x_stride, y.data(), y.stride(), CpuIsa::Avx512),
                    KernelStatus::Ok);
          const std::vector<float> got = y.dense();
          for (int64_t i = 0; i < m; ++i) {
            const QuantizedRow r = quantize_row(x.data() + i * x_stride, cols);
            for (int64_t n = 0; n < rows; ++n)
              ASSERT_NEAR(got[static_cast<size_t>(i * rows + n)], ref[static_cast<size_t>(i * rows + n)],
                          kernel_tolerance(w, r, n))
                  << "row " << i << " output " << n;
          }
          ASSERT_TRUE(y.guards_intact());
          ++runs;
        }
      }
    }
  }
  if (runs == 0) GTEST_SKIP() << "this CPU has no AVX-512 VNNI: the int8 prefill GEMM does not run here";
}

TEST(UniformQ8, GemmTakesNarrowCodesAndSymmetricEightBitOnly) {
  const PackedWeights w3(UniformQuant{3, 64, false}, 3, 576, 1);
  const PackedWeights w8s(UniformQuant{8, 64, true}, 3, 576, 1);
  const PackedWeights w8a(UniformQuant{8, 64, false}, 3, 576, 1);
  const PackedWeights narrow_groups(UniformQuant{4, 0, true}, 3, 100, 1);  // 100 columns: not whole blocks
  std::vector<float> x(576, 1.0f), y(3);
  EXPECT_EQ(cpu::uniform_gemm_q8(w8a.view(), x.data(), 1, 576, y.data(), 3, CpuIsa::Avx512),
            KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::uniform_gemm_q8(narrow_groups.view(), x.data(), 1, 100, y.data(), 3, CpuIsa::Avx512),
            KernelStatus::InvalidArgument);
  EXPECT_FALSE(cpu::uniform_gemm_q8_supported(w3.view(), CpuIsa::Avx2));
  EXPECT_FALSE(cpu::uniform_gemm_q8_supported(w8a.view(), CpuIsa::Avx512));
  if (!cpu::uniform_gemm_q8_supported(w3.view(), CpuIsa::Avx512))
    GTEST_SKIP() << "this CPU has no AVX-512 VNNI";
  EXPECT_TRUE(cpu::uniform_gemm_q8_supported(w8s.view(), CpuIsa::Avx512));
  // A non-finite activation makes its row's outputs NaN, as on the f32 path.
  x[100] = std::numeric_limits<float>::quiet_NaN();
  ASSERT_EQ(cpu::uniform_gemm_q8(w3.view(), x.data(), 1, 576, y.data(), 3, CpuIsa::Avx512), KernelStatus::Ok);
  for (float v : y) EXPECT_TRUE(std::isnan(v));
}

TEST(UniformQ8, SupportIsDecidedByBitsGroupsAndIsa) {
  const PackedWeights w4(UniformQuant{4, 64, false}, 3, 576, 1);
  const PackedWeights w3(UniformQuant{3, 64, false}, 3, 576, 1);
  const PackedWeights w2(UniformQuant{2, 64, false}, 3, 576, 1);
  const PackedWeights w8(UniformQuant{8, 64, true}, 3, 576, 1);  // the embedding and head's w8g64s
  const PackedWeights odd(UniformQuant{4, 0, true}, 3, 100, 1);  // per-channel, 100 % 8 != 0
  EXPECT_FALSE(cpu::uniform_q8_supported(w4.view(), CpuIsa::Scalar));
  for (CpuIsa isa : test::supported_isas()) {
    EXPECT_FALSE(cpu::uniform_q8_supported(w2.view(), isa));
    EXPECT_FALSE(cpu::uniform_q8_supported(odd.view(), isa));
    std::vector<float> x(576, 1.0f), y(3);
    EXPECT_EQ(cpu::uniform_gemv_q8(w2.view(), x.data(), 1, 576, y.data(), 3, isa), KernelStatus::InvalidArgument);
    // 3-bit codes: AVX-512 VNNI with VBMI spreads them to bytes, AVX2 otherwise.
    const bool w3_runs = isa != CpuIsa::Scalar;
    EXPECT_EQ(cpu::uniform_q8_supported(w3.view(), isa), w3_runs) << cpu::cpu_isa_name(isa);
    EXPECT_EQ(cpu::uniform_gemv_q8(w3.view(), x.data(), 1, 576, y.data(), 3, isa),
              w3_runs ? KernelStatus::Ok : KernelStatus::IsaUnavailable)
        << cpu::cpu_isa_name(isa);
  }
  if (cpu::cpu_supports(CpuIsa::Avx2)) {
    EXPECT_TRUE(cpu::uniform_q8_supported(w4.view(), CpuIsa::Avx2));
    EXPECT_TRUE(cpu::uniform_q8_supported(w8.view(), CpuIsa::Avx2));
    EXPECT_TRUE(cpu::uniform_q8_supported(w3.view(), CpuIsa::Avx2));
  }
}

}  // namespace
}  // namespace fsq
