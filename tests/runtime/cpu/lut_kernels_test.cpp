// The LUT (SqueezeLLM) CPU kernels against their spec: the scalar reference equals
// dequantize_lut followed by a double matmul; every ISA variant of the GEMV stays within a
// rounding-error bound of the reference and of the row dequantizer is bit-exact with
// dequantize_lut, on 3- and 4-bit codes, odd shapes, dense-only and with a CSR part (16- and
// 32-bit columns, empty rows, a row with every column sparse), without writing outside its
// output or reading past the packed codes; the GEMV gives the same bits on 1, 2 or 3 threads;
// the view checks reject each malformation.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/half.h"
#include "formats/quant/bitpack.h"
#include "formats/quant/lut_quant.h"
#include "runtime/cpu/lut_kernels.h"
#include "uniform_test_support.h"

namespace fsq {
namespace {

using cpu::CpuIsa;
using cpu::KernelStatus;
using cpu::LutColType;
using test::GuardedOutput;

// Not multiples of 16 or 32 (1, 7, 37, 100, 131, 300), exactly whole blocks (128, 256: the
// AVX-512 block is 128 codes, the AVX2 one 64), some of both (1000), a 4-bit AVX-512 half
// block alone (100), after whole blocks (192, 1000; 1000 and 100 with columns after it),
// and more columns than one chunk of the 4-bit GEMV at m = 1 (4500 > 4096: two chunks and
// a tail).
const int64_t kCols[] = {1, 7, 37, 100, 128, 131, 192, 256, 300, 1000, 4500};
const int64_t kRows[] = {1, 3, 17};

enum class Sparse { None, U16, I32 };
const char* sparse_name(Sparse s) { return s == Sparse::None ? "dense" : s == Sparse::U16 ? "csr-u16" : "csr-i32"; }

// A random LUT matrix and its packed form. Sparse part (when asked): row 0 empty, the last
// row (when rows > 1) sparse in every column, the others about `density` of their columns.
struct LutWeights {
  LutMatrix m;
  std::vector<uint32_t> words;
  std::vector<uint16_t> col16;
  Sparse sparse = Sparse::None;

  LutWeights(int bits, int64_t rows, int64_t cols, Sparse s, uint32_t seed, double density = 0.05) : sparse(s) {
    std::mt19937 rng(seed);
    m.bits = bits;
    m.rows = rows;
    m.cols = cols;
    std::uniform_int_distribution<int> code(0, (1 << bits) - 1);
    std::normal_distribution<float> centroid(0.0f, 0.05f), correction(0.0f, 0.2f);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (int64_t j = 0; j < rows * cols; ++j) m.codes.push_back(static_cast<uint8_t>(code(rng)));
    for (int64_t j = 0; j < rows * m.levels(); ++j) m.lut.push_back(f32_to_f16(centroid(rng)));
    if (s != Sparse::None) {
      m.row_ptr.push_back(0);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
          const bool all = rows > 1 && r == rows - 1;
          if (r != 0 && (all || unit(rng) < density)) {
            m.col.push_back(static_cast<int32_t>(c));
            m.val.push_back(f32_to_f16(correction(rng)));
          }
        }
        m.row_ptr.push_back(static_cast<int32_t>(m.col.size()));
      }
      for (int32_t c : m.col) col16.push_back(static_cast<uint16_t>(c));
    }
    validate_lut_matrix(m, "test matrix");
    words = pack_rows(m.codes, rows, cols, bits);
  }

  cpu::LutWeightsView view() const {
    cpu::LutWeightsView v;
    v.words = words.data();
    v.rows = m.rows;
    v.cols = m.cols;
    v.words_per_row = packed_words_per_row(m.bits, m.cols);
    v.bits = m.bits;
    v.lut = m.lut.data();
    if (sparse != Sparse::None) {
      v.row_ptr = m.row_ptr.data();
      v.col_type = sparse == Sparse::U16 ? LutColType::U16 : LutColType::I32;
      v.col = sparse == Sparse::U16 ? static_cast<const void*>(col16.data()) : static_cast<const void*>(m.col.data());
      v.val = m.val.data();
      v.nnz = m.nnz();
    }
    return v;
  }
  std::vector<float> dequantized() const {
    std::vector<float> w(static_cast<size_t>(m.rows * m.cols));
    dequantize_lut(m, w.data());
    return w;
  }
  // |centroid| + |sparse value| per weight: what the rounding-error bound of a sum scales with.
  std::vector<double> magnitudes() const {
    std::vector<double> a(static_cast<size_t>(m.rows * m.cols));
    for (int64_t r = 0; r < m.rows; ++r)
      for (int64_t c = 0; c < m.cols; ++c)
        a[static_cast<size_t>(r * m.cols + c)] =
            std::fabs(f16_to_f32(m.lut[static_cast<size_t>(r * m.levels() + m.codes[static_cast<size_t>(r * m.cols + c)])]));
    if (m.has_sparse())
      for (int64_t r = 0; r < m.rows; ++r)
        for (int32_t e = m.row_ptr[static_cast<size_t>(r)]; e < m.row_ptr[static_cast<size_t>(r + 1)]; ++e)
          a[static_cast<size_t>(r * m.cols + m.col[static_cast<size_t>(e)])] += std::fabs(f16_to_f32(m.val[static_cast<size_t>(e)]));
    return a;
  }
  int64_t row_nnz(int64_t r) const {
    return m.has_sparse() ? m.row_ptr[static_cast<size_t>(r + 1)] - m.row_ptr[static_cast<size_t>(r)] : 0;
  }
  std::string label() const {
    return "lut" + std::to_string(m.bits) + " [" + std::to_string(m.rows) + " x " + std::to_string(m.cols) + "] " +
           sparse_name(sparse);
  }
};

// Every (bits, sparse kind, rows, cols) the shape tests run.
template <typename Fn>
void for_each_case(const Fn& fn) {
  uint32_t seed = 100;
  for (int bits : {3, 4})
    for (Sparse s : {Sparse::None, Sparse::U16, Sparse::I32})
      for (int64_t rows : kRows)
        for (int64_t cols : kCols) fn(LutWeights(bits, rows, cols, s, ++seed));
}

// Rounding-error bound of a float kernel's y[i, n] against the reference (float of a
// double sum of x * fl(centroid + value)), with u = 2^-24 the unit roundoff of float:
//   the kernel sums K products x * centroid and nnz_n products x * value in float in some
//   order, then adds the two sums: at most (K + nnz_n + 1) * u * S / (1 - ...) with
//   S = sum_k |x[i, k]| (|centroid| + |value|);
//   the reference rounds centroid + value to float (<= u * S over the row) and its double
//   sum to float (<= u * |ref|).
// (K + nnz_n + 3) * u * S + u * |ref| bounds it all (the 1 / (1 - (K + nnz)u) factor is
// < 1.0001 at these sizes and covered by the spare terms).
double error_bound(const LutWeights& w, const std::vector<double>& mag, const float* x, int64_t x_stride,
                   int64_t i, int64_t n, float ref) {
  constexpr double u = 0x1p-24;
  double s = 0.0;
  for (int64_t k = 0; k < w.m.cols; ++k)
    s += std::fabs(static_cast<double>(x[i * x_stride + k])) * mag[static_cast<size_t>(n * w.m.cols + k)];
  return static_cast<double>(w.m.cols + w.row_nnz(n) + 3) * u * s + u * std::fabs(static_cast<double>(ref));
}

class LutKernelsIsa : public ::testing::TestWithParam<CpuIsa> {
 protected:
  void SetUp() override {
    if (!cpu::cpu_supports(GetParam()))
      GTEST_SKIP() << "this CPU does not support " << cpu::cpu_isa_name(GetParam());
  }
};

TEST(LutKernels, ReferenceIsDequantizeLutThenDoubleMatmul) {
  // Same float weights, same products, same double summation order: bit-equal results.
  for_each_case([](const LutWeights& w) {
    SCOPED_TRACE(w.label());
    const int64_t m = 3, x_stride = w.m.cols + test::kXPadding;
    const std::vector<float> x = test::activations(m, w.m.cols, x_stride, 5);
    GuardedOutput y(m, w.m.rows, w.m.rows + test::kYPadding);
    ASSERT_EQ(cpu::lut_matmul_reference(w.view(), x.data(), m, x_stride, y.data(), y.stride()), KernelStatus::Ok);
    const std::vector<double> want = test::naive_matmul(w.dequantized(), w.m.rows, w.m.cols, x.data(), m, x_stride);
    const std::vector<float> got = y.dense();
    for (size_t j = 0; j < want.size(); ++j) ASSERT_EQ(got[j], static_cast<float>(want[j])) << "output " << j;
    EXPECT_TRUE(y.guards_intact());
  });
}

TEST_P(LutKernelsIsa, GemvWithinRoundingBoundOfReference) {
  const CpuIsa isa = GetParam();
  for_each_case([&](const LutWeights& w) {
    // m = 1 .. 9 and 17: one partial batch, a whole one, one and a bit, two and a bit.
    const int64_t max_m = 2 * cpu::kMaxGemvRows + 1, rows = w.m.rows, cols = w.m.cols;
    const int64_t x_stride = cols + test::kXPadding;
    const std::vector<float> x = test::activations(max_m, cols, x_stride, 7);
    std::vector<float> ref(static_cast<size_t>(max_m * rows));
    ASSERT_EQ(cpu::lut_matmul_reference(w.view(), x.data(), max_m, x_stride, ref.data(), rows), KernelStatus::Ok);
    const std::vector<double> mag = w.magnitudes();
    for (int64_t m = 1; m <= max_m; m = m == cpu::kMaxGemvRows + 1 ? max_m : m + 1) {
      SCOPED_TRACE(w.label() + " " + cpu::cpu_isa_name(isa) + " m=" + std::to_string(m));
      GuardedOutput y(m, rows, rows + test::kYPadding);
      ASSERT_EQ(cpu::lut_gemv(w.view(), x.data(), m, x_stride, y.data(), y.stride(), isa), KernelStatus::Ok);
      ASSERT_TRUE(y.guards_intact());
      for (int64_t i = 0; i < m; ++i)
        for (int64_t n = 0; n < rows; ++n) {
          const float r = ref[static_cast<size_t>(i * rows + n)], got = y.at(i, n);
          ASSERT_TRUE(std::isfinite(got)) << "y[" << i << ", " << n << "]";
          ASSERT_LE(std::fabs(static_cast<double>(got) - r), error_bound(w, mag, x.data(), x_stride, i, n, r))
              << "y[" << i << ", " << n << "] = " << got << ", reference " << r;
        }
    }
  });
}

TEST_P(LutKernelsIsa, DequantizeRowsIsBitExact) {
  const CpuIsa isa = GetParam();
  for_each_case([&](const LutWeights& w) {
    SCOPED_TRACE(w.label() + " " + cpu::cpu_isa_name(isa));
    const std::vector<float> want = w.dequantized();
    const int64_t cols = w.m.cols;
    // All rows, and an inner block when there is one.
    for (auto [row0, nrows] : {std::pair<int64_t, int64_t>{0, w.m.rows}, {w.m.rows / 3, w.m.rows - w.m.rows / 3 - 1}}) {
      if (nrows <= 0) continue;
      GuardedOutput out(nrows, cols, cols);
      ASSERT_EQ(cpu::lut_dequantize_rows(w.view(), row0, nrows, out.data(), isa), KernelStatus::Ok);
      const std::vector<float> got = out.dense();
      ASSERT_EQ(0, std::memcmp(got.data(), &want[static_cast<size_t>(row0 * cols)], got.size() * sizeof(float)))
          << "rows " << row0 << " .. " << row0 + nrows;
      ASSERT_TRUE(out.guards_intact());
    }
  });
}

// The packed codes end right before an unreadable page: a kernel reading past the last
// row's codes (a whole-vector load of a partial one) crashes.
TEST_P(LutKernelsIsa, ReadsNothingPastTheCodes) {
  const CpuIsa isa = GetParam();
  for (int bits : {3, 4})
    for (int64_t cols : kCols)
      for (int64_t rows : {int64_t{1}, int64_t{5}}) {
        const LutWeights w(bits, rows, cols, Sparse::U16, 77);
        SCOPED_TRACE(w.label() + " " + cpu::cpu_isa_name(isa));
        const test::BytesBeforeGuardPage words(w.words.data(), w.words.size() * sizeof(uint32_t));
        cpu::LutWeightsView v = w.view();
        v.words = words.as<uint32_t>();
        const int64_t x_stride = cols + test::kXPadding, m = 2;
        const std::vector<float> x = test::activations(m, cols, x_stride, 3);
        std::vector<float> y(static_cast<size_t>(m * rows)), ref(y.size()), out(static_cast<size_t>(rows * cols));
        EXPECT_EQ(cpu::lut_gemv(v, x.data(), m, x_stride, y.data(), rows, isa), KernelStatus::Ok);
        EXPECT_EQ(cpu::lut_dequantize_rows(v, 0, rows, out.data(), isa), KernelStatus::Ok);
        const std::vector<float> want = w.dequantized();
        EXPECT_EQ(0, std::memcmp(out.data(), want.data(), out.size() * sizeof(float)));
      }
}

// Each output is one thread's fixed-order sum: the thread count changes no bit. Nonzeros
// piled into a few rows move the cost-balanced split between threads.
TEST_P(LutKernelsIsa, GemvIsBitIdenticalOnAnyThreadCount) {
  const CpuIsa isa = GetParam();
  const int saved = omp_get_max_threads();
  for (int bits : {3, 4}) {
    const LutWeights w(bits, 301, 333, Sparse::I32, 91, 0.02);  // rows * cols > the parallel threshold
    const int64_t cols = w.m.cols, rows = w.m.rows;
    for (int64_t m : {int64_t{1}, int64_t{5}, int64_t{11}}) {
      SCOPED_TRACE(w.label() + " " + cpu::cpu_isa_name(isa) + " m=" + std::to_string(m));
      const std::vector<float> x = test::activations(m, cols, cols, 13);
      std::vector<std::vector<float>> y;
      for (int threads : {1, 2, 3}) {
        omp_set_num_threads(threads);
        y.emplace_back(static_cast<size_t>(m * rows));
        ASSERT_EQ(cpu::lut_gemv(w.view(), x.data(), m, cols, y.back().data(), rows, isa), KernelStatus::Ok);
      }
      EXPECT_EQ(0, std::memcmp(y[0].data(), y[1].data(), y[0].size() * sizeof(float)));
      EXPECT_EQ(0, std::memcmp(y[0].data(), y[2].data(), y[0].size() * sizeof(float)));
    }
  }
  omp_set_num_threads(saved);
}

// On a CPU with VBMI the AVX-512 GEMV above ran its VBMI variant (3-bit unpacking by
// vpmultishiftqb); the plain AVX-512 one must give the very same bits.
TEST(LutKernels, Avx512VbmiIsBitIdenticalToPlainAvx512) {
  if (!cpu::lut_vbmi_in_use()) GTEST_SKIP() << "this CPU has no AVX-512 VBMI";
  for_each_case([](const LutWeights& w) {
    const int64_t cols = w.m.cols, rows = w.m.rows;
    for (int64_t m : {int64_t{1}, int64_t{2}, int64_t{8}}) {
      SCOPED_TRACE(w.label() + " m=" + std::to_string(m));
      const std::vector<float> x = test::activations(m, cols, cols, 17);
      std::vector<float> vbmi(static_cast<size_t>(m * rows)), plain(vbmi.size());
      ASSERT_EQ(cpu::lut_gemv(w.view(), x.data(), m, cols, vbmi.data(), rows, CpuIsa::Avx512), KernelStatus::Ok);
      cpu::set_lut_vbmi_allowed(false);
      const KernelStatus status = cpu::lut_gemv(w.view(), x.data(), m, cols, plain.data(), rows, CpuIsa::Avx512);
      cpu::set_lut_vbmi_allowed(true);
      ASSERT_EQ(status, KernelStatus::Ok);
      EXPECT_EQ(0, std::memcmp(vbmi.data(), plain.data(), vbmi.size() * sizeof(float)));
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Isa, LutKernelsIsa, ::testing::Values(CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx512),
                         [](const ::testing::TestParamInfo<CpuIsa>& p) { return cpu::cpu_isa_name(p.param); });

// A small valid view to break one field at a time.
struct Fixture {
  LutWeights w{4, 4, 40, Sparse::U16, 5, 0.2};
  std::vector<int32_t> row_ptr = w.m.row_ptr;
  std::vector<int32_t> col32 = w.m.col;
  std::vector<uint16_t> col16 = w.col16;
  cpu::LutWeightsView view() const {
    cpu::LutWeightsView v = w.view();
    v.row_ptr = row_ptr.data();
    v.col = col16.data();
    return v;
  }
  cpu::LutWeightsView view_i32() const {
    cpu::LutWeightsView v = view();
    v.col_type = LutColType::I32;
    v.col = col32.data();
    return v;
  }
};

TEST(LutKernels, CheckViewRejectsEachMalformation) {
  const Fixture f;
  ASSERT_GE(f.w.row_nnz(1), 2);  // row 1 has nonzeros to break below
  EXPECT_EQ(cpu::check_lut_view(f.view()), KernelStatus::Ok);
  EXPECT_EQ(cpu::check_lut_view(f.view_i32()), KernelStatus::Ok);
  cpu::LutWeightsView dense = f.view();
  dense.row_ptr = nullptr;
  dense.col = nullptr;
  dense.val = nullptr;
  dense.nnz = 0;
  EXPECT_EQ(cpu::check_lut_view(dense), KernelStatus::Ok);

  const auto rejects = [&](const char* what, auto&& edit, bool from_dense = false) {
    cpu::LutWeightsView v = from_dense ? dense : f.view();
    edit(v);
    EXPECT_EQ(cpu::check_lut_view(v), KernelStatus::InvalidArgument) << what;
    EXPECT_EQ(cpu::check_lut_sparse(v), KernelStatus::InvalidArgument) << what;
  };
  rejects("bits 2", [](cpu::LutWeightsView& v) { v.bits = 2; });
  rejects("bits 8", [](cpu::LutWeightsView& v) { v.bits = 8; });
  rejects("bits 3 with 4-bit words_per_row", [](cpu::LutWeightsView& v) { v.bits = 3; });
  rejects("null words", [](cpu::LutWeightsView& v) { v.words = nullptr; });
  rejects("null lut", [](cpu::LutWeightsView& v) { v.lut = nullptr; });
  rejects("rows 0", [](cpu::LutWeightsView& v) { v.rows = 0; });
  rejects("cols 0", [](cpu::LutWeightsView& v) { v.cols = 0; });
  rejects("cols disagree with words_per_row", [](cpu::LutWeightsView& v) { v.cols += 8; });
  rejects("words_per_row + 1", [](cpu::LutWeightsView& v) { v.words_per_row += 1; });
  rejects("dense with nnz", [](cpu::LutWeightsView& v) { v.nnz = 1; }, true);
  rejects("dense with col", [&](cpu::LutWeightsView& v) { v.col = f.col16.data(); }, true);
  rejects("dense with val", [&](cpu::LutWeightsView& v) { v.val = f.w.m.val.data(); }, true);
  rejects("negative nnz", [](cpu::LutWeightsView& v) { v.nnz = -1; });
  rejects("null col", [](cpu::LutWeightsView& v) { v.col = nullptr; });
  rejects("null val", [](cpu::LutWeightsView& v) { v.val = nullptr; });
  rejects("unknown col type", [](cpu::LutWeightsView& v) { v.col_type = static_cast<LutColType>(7); });
  rejects("nnz != row_ptr[rows]", [](cpu::LutWeightsView& v) { v.nnz -= 1; });
  {
    Fixture g;
    g.row_ptr[0] = 1;
    EXPECT_EQ(cpu::check_lut_view(g.view()), KernelStatus::InvalidArgument) << "row_ptr[0] != 0";
    g = Fixture();
    g.row_ptr.back() += 1;
    EXPECT_EQ(cpu::check_lut_view(g.view()), KernelStatus::InvalidArgument) << "row_ptr[rows] != nnz";
  }
  // 16-bit columns cannot address more than 65536 columns; 32-bit ones can.
  const int64_t wide = 70000;
  std::vector<uint32_t> words(static_cast<size_t>(packed_words_per_row(4, wide)));
  std::vector<uint16_t> lut(16, 0);
  const std::vector<int32_t> row_ptr = {0, 1};
  const std::vector<int32_t> col32 = {69999};
  const std::vector<uint16_t> col16 = {1}, val = {0x3c00};
  cpu::LutWeightsView v;
  v.words = words.data();
  v.rows = 1;
  v.cols = wide;
  v.words_per_row = packed_words_per_row(4, wide);
  v.lut = lut.data();
  v.row_ptr = row_ptr.data();
  v.col_type = LutColType::I32;
  v.col = col32.data();
  v.val = val.data();
  v.nnz = 1;
  EXPECT_EQ(cpu::check_lut_sparse(v), KernelStatus::Ok);
  v.col_type = LutColType::U16;
  v.col = col16.data();
  EXPECT_EQ(cpu::check_lut_view(v), KernelStatus::InvalidArgument) << "u16 columns with cols > 65536";
}

TEST(LutKernels, CheckSparseRejectsEachMalformation) {
  const Fixture f;
  EXPECT_EQ(cpu::check_lut_sparse(f.view()), KernelStatus::Ok);
  EXPECT_EQ(cpu::check_lut_sparse(f.view_i32()), KernelStatus::Ok);
  const int32_t first = f.row_ptr[1];  // row 1's first nonzero
  const auto rejects = [&](const char* what, auto&& edit, bool i32) {
    Fixture g;
    edit(g);
    const cpu::LutWeightsView v = i32 ? g.view_i32() : g.view();
    EXPECT_EQ(cpu::check_lut_view(v), KernelStatus::Ok) << what << " (the O(1) check cannot see it)";
    EXPECT_EQ(cpu::check_lut_sparse(v), KernelStatus::InvalidArgument) << what;
    std::vector<float> x(static_cast<size_t>(v.cols), 1.0f), y(static_cast<size_t>(v.rows));
    EXPECT_EQ(cpu::lut_matmul_reference(v, x.data(), 1, v.cols, y.data(), v.rows), KernelStatus::InvalidArgument)
        << what;
  };
  for (bool i32 : {false, true}) {
    rejects("decreasing row_ptr", [](Fixture& g) { std::swap(g.row_ptr[1], g.row_ptr[2]); }, i32);
    rejects("repeated column", [&](Fixture& g) { g.col16[first + 1] = g.col16[first]; g.col32[first + 1] = g.col32[first]; }, i32);
    rejects("decreasing columns", [&](Fixture& g) {
      std::swap(g.col16[first], g.col16[first + 1]);
      std::swap(g.col32[first], g.col32[first + 1]);
    }, i32);
    rejects("column == cols", [&](Fixture& g) {
      const int32_t last = g.row_ptr[2] - 1;
      g.col16[last] = static_cast<uint16_t>(g.w.m.cols);
      g.col32[last] = static_cast<int32_t>(g.w.m.cols);
    }, i32);
  }
  rejects("negative column", [&](Fixture& g) { g.col32[first] = -1; }, true);
}

TEST(LutKernels, KernelsRejectInvalidArguments) {
  const LutWeights w(4, 4, 64, Sparse::U16, 3);
  const std::vector<float> x(2 * 64, 1.0f);
  std::vector<float> y(16), out(4 * 64);
  const CpuIsa isa = cpu::best_cpu_isa();
  EXPECT_EQ(cpu::lut_gemv(w.view(), x.data(), 1, 64, y.data(), 4, isa), KernelStatus::Ok);
  EXPECT_EQ(cpu::lut_gemv(w.view(), x.data(), 0, 64, nullptr, 4, isa), KernelStatus::Ok);
  EXPECT_EQ(cpu::lut_gemv(w.view(), x.data(), 1, 63, y.data(), 4, isa), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::lut_gemv(w.view(), x.data(), 2, 64, y.data(), 3, isa), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::lut_gemv(w.view(), nullptr, 1, 64, y.data(), 4, isa), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::lut_gemv(w.view(), x.data(), -1, 64, y.data(), 4, isa), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::lut_matmul_reference(w.view(), x.data(), 1, 64, nullptr, 4), KernelStatus::InvalidArgument);
  cpu::LutWeightsView bad = w.view();
  bad.words_per_row += 1;
  EXPECT_EQ(cpu::lut_gemv(bad, x.data(), 1, 64, y.data(), 4, isa), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::lut_dequantize_rows(bad, 0, 4, out.data(), isa), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::lut_dequantize_rows(w.view(), 3, 2, out.data(), isa), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::lut_dequantize_rows(w.view(), -1, 2, out.data(), isa), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::lut_dequantize_rows(w.view(), 0, 4, nullptr, isa), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::lut_dequantize_rows(w.view(), 0, 4, out.data(), isa), KernelStatus::Ok);
  for (CpuIsa other : {CpuIsa::Avx2, CpuIsa::Avx512})
    if (!cpu::cpu_supports(other)) {
      EXPECT_EQ(cpu::lut_gemv(w.view(), x.data(), 1, 64, y.data(), 4, other), KernelStatus::IsaUnavailable);
    }
}

}  // namespace
}  // namespace fsq
