// LutLinear: forward through both paths (fused LUT GEMV for <= 8 rows, blocked dequantize +
// GEMM above) on every ISA, 3 and 4 bits, with and without a sparse part, against the
// scalar reference (dequantize_lut, then a double-precision matmul); bias, batch dimensions
// and the bytes it reports; int8 decode only in forward_rows.
#include "runtime/lut_linear.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <random>

#include "common/error.h"
#include "common/half.h"
#include "cpu/uniform_test_support.h"
#include "runtime/cpu/int8_kernels.h"  // cpu_has_avx512_vnni
#include "runtime/cpu/lut_q8_kernels.h"

namespace fsq {
namespace {

using cpu::CpuIsa;

const int64_t kForwardRowCounts[] = {1, 8, 9, 33};  // GEMV up to kMaxGemvRows, then blocked GEMM

// A random LUT matrix: sorted centroids per row, random codes, and (when `sparse`) about one
// correction per 50 weights with some rows left empty.
LutMatrix random_lut(int bits, int64_t rows, int64_t cols, bool sparse, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  LutMatrix m;
  m.bits = bits;
  m.rows = rows;
  m.cols = cols;
  for (int64_t i = 0; i < rows * cols; ++i) m.codes.push_back(static_cast<uint8_t>(rng() % (1u << bits)));
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<float> c(static_cast<size_t>(m.levels()));
    for (float& v : c) v = 0.05f * normal(rng);
    std::sort(c.begin(), c.end());
    for (float v : c) m.lut.push_back(f32_to_f16(v));
  }
  if (sparse) {
    m.row_ptr.push_back(0);
    for (int64_t r = 0; r < rows; ++r) {
      if (r % 3 != 1)
        for (int64_t c = 0; c < cols; ++c)
          if (rng() % 50 == 0) {
            m.col.push_back(static_cast<int32_t>(c));
            m.val.push_back(f32_to_f16(0.5f * normal(rng)));
          }
      m.row_ptr.push_back(static_cast<int32_t>(m.val.size()));
    }
  }
  return m;
}

at::Tensor to_tensor(const std::vector<float>& v, std::vector<int64_t> shape) {
  return at::from_blob(const_cast<float*>(v.data()), shape, at::kFloat).clone();
}

std::vector<float> to_vector(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kFloat).contiguous();
  return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

std::vector<float> reference(const LutMatrix& m, const std::vector<float>& x, int64_t rows_of_x) {
  std::vector<float> w(static_cast<size_t>(m.rows * m.cols));
  dequantize_lut(m, w.data());
  const std::vector<double> y = test::naive_matmul(w, m.rows, m.cols, x.data(), rows_of_x, m.cols);
  return {y.begin(), y.end()};
}

TEST(LutLinear, ForwardMatchesReferenceOnEveryIsa) {
  for (int bits : {3, 4})
    for (bool sparse : {false, true})
      for (auto [rows, cols] : {std::pair<int64_t, int64_t>{7, 64}, {129, 96}, {300, 176}}) {
        const LutMatrix m = random_lut(bits, rows, cols, sparse, static_cast<uint32_t>(bits * 1000 + rows));
        LutLinear linear(m, std::nullopt, "squeezellm");
        const int64_t max_m = kForwardRowCounts[std::size(kForwardRowCounts) - 1];
        const std::vector<float> x = test::activations(max_m, cols, cols, 5);
        const std::vector<float> ref = reference(m, x, max_m);
        for (CpuIsa isa : test::supported_isas()) {
          linear.set_cpu_isa(isa);
          for (int64_t rows_of_x : kForwardRowCounts) {
            SCOPED_TRACE(linear.describe() + " " + cpu::cpu_isa_name(isa) + " m=" + std::to_string(rows_of_x));
            const std::vector<float> xm(x.begin(), x.begin() + rows_of_x * cols);
            const at::Tensor y = linear.forward(to_tensor(xm, {rows_of_x, cols}));
            ASSERT_EQ(y.sizes(), (at::IntArrayRef{rows_of_x, rows}));
            ASSERT_TRUE(test::nmse_within(to_vector(y).data(), ref.data(), rows_of_x * rows, test::kKernelNmse));
          }
        }
      }
}

TEST(LutLinear, BiasBatchDimensionsAndStoredBytes) {
  const int64_t rows = 65, cols = 128;
  const LutMatrix m = random_lut(4, rows, cols, true, 7);
  const std::vector<float> bias = test::gaussian(1, rows, 8, 1.0f);
  const LutLinear linear(m, to_tensor(bias, {rows}), "squeezellm");
  const std::vector<float> x = test::activations(6, cols, cols, 9);
  std::vector<float> ref = reference(m, x, 6);
  for (size_t j = 0; j < ref.size(); ++j) ref[j] += bias[j % rows];
  const at::Tensor y = linear.forward(to_tensor(x, {2, 3, cols}));
  ASSERT_EQ(y.sizes(), (at::IntArrayRef{2, 3, rows}));
  EXPECT_TRUE(test::nmse_within(to_vector(y).data(), ref.data(), 6 * rows, test::kKernelNmse));
  // codes (4 words per row of 128 four-bit codes) + 16 fp16 centroids per row + CSR + bias
  const int64_t expected = rows * 16 * 4 + rows * 16 * 2 + (rows + 1) * 4 + m.nnz() * 4 + rows * 4;
  EXPECT_EQ(linear.weight_bytes(), expected);
  EXPECT_NE(linear.describe().find("lut4 [65 x 128] squeezellm, " + std::to_string(m.nnz()) + " sparse"),
            std::string::npos);
}

// What an int8 path of `linear` must give for x [m, cols]: `kernel` (cpu::lut_gemv_q8 or
// cpu::lut_gemm_q8) on int8 tables made from the linear's own weights (with the nonzeros'
// rows, as the linear prepares them), plus the bias.
template <typename Kernel>
std::vector<float> q8_kernel_plus_bias(const LutLinear& linear, const std::vector<float>& bias,
                                       const std::vector<float>& x, int64_t m, Kernel kernel) {
  const cpu::LutWeightsView w = linear.weights_view();
  std::vector<uint8_t> tables(static_cast<size_t>(w.rows * 16));
  std::vector<float> scales(static_cast<size_t>(w.rows)), y(static_cast<size_t>(m * w.rows));
  std::vector<uint16_t> sparse_rows(static_cast<size_t>(w.nnz));
  cpu::prepare_lut_q8_tables(w, tables.data(), scales.data());
  const bool stream = cpu::lut_q8_sparse_rows_apply(w);
  if (stream) cpu::prepare_lut_q8_sparse_rows(w, sparse_rows.data());
  EXPECT_EQ(kernel(w, {tables.data(), scales.data(), stream ? sparse_rows.data() : nullptr}, x.data(), m, w.cols,
                   y.data(), w.rows, cpu::selected_cpu_isa()),
            cpu::KernelStatus::Ok);
  for (size_t j = 0; j < y.size(); ++j) y[j] += bias[j % static_cast<size_t>(w.rows)];
  return y;
}

// set_int8_decode: forward_rows (the decode fast path) multiplies on int8 activations and
// centroids exactly as cpu::lut_gemv_q8 does, bias added; forward() stays on the exact
// kernels; off again, forward_rows is exact too. Where the CPU has no such kernel (no
// AVX-512 VNNI or AVX2 for 4 bits, no VNNI and VBMI for 3), int8_decode() stays false and
// forward_rows exact.
TEST(LutLinear, Int8DecodeRunsTheQ8KernelOnlyInForwardRows) {
  for (int bits : {3, 4}) {
    const int64_t rows = 40, cols = 96, m = 3;
    const LutMatrix mat = random_lut(bits, rows, cols, true, 11);
    const std::vector<float> bias = test::gaussian(1, rows, 12, 1.0f);
    LutLinear linear(mat, to_tensor(bias, {rows}), "squeezellm");
    const std::vector<float> x = test::activations(m, cols, cols, 13);
    std::vector<float> exact(static_cast<size_t>(m * rows)), got(exact.size());
    linear.forward_rows(x.data(), m, exact.data());
    linear.set_int8_decode(true);
    SCOPED_TRACE(linear.describe());
    EXPECT_EQ(linear.int8_decode(), cpu::lut_q8_supported(linear.weights_view(), cpu::selected_cpu_isa()));
    linear.forward_rows(x.data(), m, got.data());
    if (linear.int8_decode()) {
      EXPECT_EQ(got, q8_kernel_plus_bias(linear, bias, x, m, cpu::lut_gemv_q8));
      EXPECT_NE(got, exact);
    } else {
      EXPECT_EQ(got, exact);
    }
    std::vector<float> forward = to_vector(linear.forward(to_tensor(x, {m, cols})));
    EXPECT_EQ(forward, exact);
    linear.set_int8_decode(false);
    linear.forward_rows(x.data(), m, got.data());
    EXPECT_EQ(got, exact);
  }
}

// set_int8_prefill: forward() of more than kMaxGemvRows rows multiplies on int8 activations
// and centroids exactly as cpu::lut_gemm_q8 does, bias added; fewer rows stay exact; off
// again, forward is exact. CPUs without AVX-512 VNNI (and, for 3-bit codes, VBMI) keep
// int8_prefill() false and the exact path.
TEST(LutLinear, Int8PrefillRunsTheQ8GemmOnPrompts) {
  for (int bits : {3, 4}) {
    const int64_t rows = 40, cols = 96, m = 20;
    const LutMatrix mat = random_lut(bits, rows, cols, true, 21);
    const std::vector<float> bias = test::gaussian(1, rows, 22, 1.0f);
    LutLinear linear(mat, to_tensor(bias, {rows}), "squeezellm");
    const std::vector<float> x = test::activations(m, cols, cols, 23);
    const std::vector<float> exact = to_vector(linear.forward(to_tensor(x, {m, cols})));
    const std::vector<float> exact_short = to_vector(linear.forward(to_tensor(x, {2, cols})));
    linear.set_int8_prefill(true);
    SCOPED_TRACE(linear.describe());
    EXPECT_EQ(linear.int8_prefill(), cpu::lut_gemm_q8_supported(linear.weights_view(), cpu::selected_cpu_isa()));
    const bool vnni = cpu::selected_cpu_isa() == cpu::CpuIsa::Avx512 && cpu::cpu_has_avx512_vnni();
    EXPECT_EQ(linear.int8_prefill(), vnni && (bits == 4 || cpu::cpu_has_avx512_vbmi()));
    const std::vector<float> got = to_vector(linear.forward(to_tensor(x, {m, cols})));
    if (linear.int8_prefill()) {
      EXPECT_EQ(got, q8_kernel_plus_bias(linear, bias, x, m, cpu::lut_gemm_q8));
      EXPECT_NE(got, exact);
    } else {
      EXPECT_EQ(got, exact);
    }
    EXPECT_EQ(to_vector(linear.forward(to_tensor(x, {2, cols}))), exact_short);
    linear.set_int8_prefill(false);
    EXPECT_EQ(to_vector(linear.forward(to_tensor(x, {m, cols}))), exact);
  }
}

TEST(LutLinear, WrongInputWidthIsRefused) {
  const LutLinear linear(random_lut(3, 4, 32, false, 3), std::nullopt, "");
  EXPECT_THROW(linear.forward(at::zeros({1, 31})), Error);
}

}  // namespace
}  // namespace fsq
