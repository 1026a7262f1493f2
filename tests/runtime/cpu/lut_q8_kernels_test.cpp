// lut_gemv_q8 (3- and 4-bit LUT weights on int8 activations) against its spec and the exact
// float product: the int8 tables round each centroid to its row's grid; the AVX-512 VNNI
// kernel stays within float-rounding bounds of the double reference on odd shapes, batch
// sizes 1..9 and 17, dense and with CSR parts (16- and 32-bit columns), without writing
// outside its output; the reference stays within the bound that rounding x and the
// centroids to 8 bits implies of the exact product; nothing past the codes is read; any
// thread count gives the same bits.
#include "runtime/cpu/lut_q8_kernels.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/half.h"
#include "formats/quant/bitpack.h"
#include "runtime/cpu/int8_kernels.h"
#include "runtime/cpu/uniform_q8_kernels.h"
#include "uniform_test_support.h"

namespace fsq {
namespace {

using cpu::KernelStatus;
using cpu::LutColType;
constexpr double kU = 0x1p-24;  // float's unit roundoff

// A random LUT matrix, packed, with its int8 tables; CSR part (when asked) about 3 % of each
// row but the first.
struct Q8Lut {
  int bits;
  int64_t rows, cols;
  std::vector<uint8_t> codes;
  std::vector<uint32_t> words;
  std::vector<uint16_t> lut, val, col16;
  std::vector<int32_t> row_ptr, col32;
  LutColType col_type = LutColType::U16;
  std::vector<uint8_t> tables;
  std::vector<float> scales;
  std::vector<uint16_t> sparse_rows;  // each nonzero's row, for the GEMV's CSR stream

  Q8Lut(int b, int64_t r, int64_t c, int sparse_bits, uint32_t seed) : bits(b), rows(r), cols(c) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> code(0, (1 << bits) - 1);
    std::normal_distribution<float> centroid(0.0f, 0.05f), correction(0.0f, 0.2f);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (int64_t j = 0; j < rows * cols; ++j) codes.push_back(static_cast<uint8_t>(code(rng)));
    for (int64_t j = 0; j < rows << bits; ++j) lut.push_back(f32_to_f16(centroid(rng)));
    words = pack_rows(codes, rows, cols, bits);
    if (sparse_bits != 0) {
      col_type = sparse_bits == 16 ? LutColType::U16 : LutColType::I32;
      row_ptr.push_back(0);
      for (int64_t n = 0; n < rows; ++n) {
        for (int64_t k = 0; k < cols; ++k)
          if (n > 0 && unit(rng) < 0.03) {
            col32.push_back(static_cast<int32_t>(k));
            col16.push_back(static_cast<uint16_t>(k));
            val.push_back(f32_to_f16(correction(rng)));
          }
        row_ptr.push_back(static_cast<int32_t>(val.size()));
      }
    }
    tables.resize(static_cast<size_t>(rows * 16));
    scales.resize(static_cast<size_t>(rows));
    cpu::prepare_lut_q8_tables(view(), tables.data(), scales.data());
    if (cpu::lut_q8_sparse_rows_apply(view())) {
      sparse_rows.resize(val.size());
      cpu::prepare_lut_q8_sparse_rows(view(), sparse_rows.data());
    }
  }
  cpu::LutWeightsView view() const {
    cpu::LutWeightsView v;
    v.words = words.data();
    v.rows = rows;
    v.cols = cols;
    v.words_per_row = packed_words_per_row(bits, cols);
    v.bits = bits;
    v.lut = lut.data();
    if (!row_ptr.empty()) {
      v.row_ptr = row_ptr.data();
      v.col_type = col_type;
      v.col = col_type == LutColType::U16 ? static_cast<const void*>(col16.data()) : col32.data();
      v.val = val.data();
      v.nnz = static_cast<int64_t>(val.size());
    }
    return v;
  }
  // stream: with the nonzeros' rows (the CSR part added as one stream), where there is a CSR part.
  cpu::LutQ8Tables q8(bool stream = false) const {
    return {tables.data(), scales.data(), stream && !sparse_rows.empty() ? sparse_rows.data() : nullptr};
  }
  float centroid(int64_t n, int64_t k) const {
    return f16_to_f32(lut[static_cast<size_t>((n << bits) + codes[static_cast<size_t>(n * cols + k)])]);
  }
  // sum over row n's nonzeros of |x[k] * value|, and their count.
  double sparse_magnitude(int64_t n, const float* x) const {
    double s = 0.0;
    if (!row_ptr.empty())
      for (int32_t e = row_ptr[static_cast<size_t>(n)]; e < row_ptr[static_cast<size_t>(n + 1)]; ++e)
        s += std::fabs(static_cast<double>(x[col32[static_cast<size_t>(e)]]) * f16_to_f32(val[static_cast<size_t>(e)]));
    return s;
  }
  int64_t nnz(int64_t n) const {
    return row_ptr.empty() ? 0 : row_ptr[static_cast<size_t>(n + 1)] - row_ptr[static_cast<size_t>(n)];
  }
};

// x[i]'s int8 codes and block scales, as every q8 path quantizes them.
struct QuantizedRow {
  std::vector<int8_t> q;
  std::vector<float> d;
  QuantizedRow(const float* x, int64_t cols)
      : q(static_cast<size_t>(cols)), d(static_cast<size_t>((cols + cpu::kQ8BlockCols - 1) / cpu::kQ8BlockCols)) {
    cpu::quantize_q8_row(x, cols, q.data(), d.data());
  }
  double scale(int64_t k) const { return d[static_cast<size_t>(k / cpu::kQ8BlockCols)]; }
};

// Rounding bound of the kernel's y[i, n] against the reference (double sums, rounded once):
// per lane the chunk terms dot * d accumulate by FMA (one rounding each, chunks of them),
// 16 lanes reduce in 4 levels, the bias term 128 * row_sum (row_sum rounded to float once)
// is subtracted and the row scale applied (2 roundings); every rounding is at most u times
// the magnitude of what it sums, so with A = sum_k |(t + 128) q| d and B = 128 sum_k |q| d,
//   |kernel - reference| <= (chunks + 8) u s (A + B) + (nnz + 5) u S_sparse + u |ref|,
// S_sparse = sum |x * value| over the row's nonzeros (summed in float, then added).
// The prefill GEMM (lut_gemm_q8) rounds once per block of 32 columns where the GEMV rounds
// once per chunk: it passes `blocks` for `chunks` (2 roundings per block: the product
// s * d and the FMA).
double kernel_bound(const Q8Lut& w, const QuantizedRow& xq, const float* x, int64_t n, float ref,
                    double steps = -1) {
  double a = 0.0, b = 0.0;
  for (int64_t k = 0; k < w.cols; ++k) {
    const double q = std::fabs(static_cast<double>(xq.q[static_cast<size_t>(k)])) * xq.scale(k);
    a += w.tables[static_cast<size_t>(n * 16 + w.codes[static_cast<size_t>(n * w.cols + k)])] * q;
    b += 128.0 * q;
  }
  const double chunks = steps >= 0 ? steps : static_cast<double>((w.cols + 63) / 64);  // 3-bit chunks: 64 columns
  return (chunks + 8) * kU * w.scales[static_cast<size_t>(n)] * (a + b) +
         static_cast<double>(w.nnz(n) + 5) * kU * w.sparse_magnitude(n, x) + kU * std::fabs(static_cast<double>(ref));
}

// What rounding x and the centroids to 8 bits may cost against the exact product:
// |x c - (d q)(s t)| <= |x - d q| |c| + d |q| |c - s t| <= d/2 |c| + d |q| s/2 per column
// (the grids' half steps; the divisions that make them add a relative 2u). Both sides are
// double sums rounded to float (u |ref| + u |exact|), and the exact one first rounds each
// centroid + sparse value to float (u |x| |c + value| per column): 2u S covers that,
// S = sum_k |x| |c| + S_sparse.
double quantization_bound(const Q8Lut& w, const QuantizedRow& xq, const float* x, int64_t n, double ref, double exact) {
  const double s = w.scales[static_cast<size_t>(n)];
  double bound = 0.0, magnitude = w.sparse_magnitude(n, x);
  for (int64_t k = 0; k < w.cols; ++k) {
    const double c = std::fabs(static_cast<double>(w.centroid(n, k)));
    bound += xq.scale(k) / 2 * (c + std::fabs(static_cast<double>(xq.q[static_cast<size_t>(k)])) * s);
    magnitude += std::fabs(static_cast<double>(x[k])) * c;
  }
  return bound * (1 + 2 * kU) + 2 * kU * magnitude + kU * (std::fabs(ref) + std::fabs(exact));
}

TEST(LutQ8Tables, EachCentroidRoundsToItsRowsGrid) {
  for (int bits : {3, 4}) {
    const Q8Lut w(bits, 5, 64, 0, 3);
    const int levels = 1 << bits;
    for (int64_t n = 0; n < w.rows; ++n) {
      float top = 0.0f;
      for (int j = 0; j < levels; ++j)
        top = std::max(top, std::fabs(f16_to_f32(w.lut[static_cast<size_t>(n * levels + j)])));
      ASSERT_EQ(w.scales[static_cast<size_t>(n)], top / 127.0f);
      for (int j = 0; j < 16; ++j) {  // a 3-bit table repeats its 8 entries
        const double c = f16_to_f32(w.lut[static_cast<size_t>(n * levels + j % levels)]);
        const int t = w.tables[static_cast<size_t>(n * 16 + j)] - 128;
        ASSERT_LE(std::abs(t), 127);
        // Nearest grid point: within half a step (plus the division's rounding).
        EXPECT_LE(std::fabs(c - t * static_cast<double>(w.scales[static_cast<size_t>(n)])),
                  w.scales[static_cast<size_t>(n)] * (0.5 + 1e-6))
            << "row " << n << " entry " << j;
      }
    }
  }
}

TEST(LutQ8Kernels, SupportedOnlyOnAvx512VnniAndWholeLanes) {
  Q8Lut w(4, 3, 64, 0, 4);
  cpu::LutWeightsView v = w.view();
  EXPECT_EQ(cpu::lut_q8_supported(v, cpu::CpuIsa::Avx2), false);
  EXPECT_EQ(cpu::lut_q8_supported(v, cpu::CpuIsa::Avx512),
            cpu::cpu_supports(cpu::CpuIsa::Avx512) && cpu::cpu_has_avx512_vnni());
  v.cols = 60;  // not a multiple of 8
  v.words_per_row = packed_words_per_row(4, 60);
  EXPECT_FALSE(cpu::lut_q8_supported(v, cpu::CpuIsa::Avx512));
  float y[3];
  const std::vector<float> x(64, 1.0f);
  EXPECT_EQ(cpu::lut_gemv_q8(v, w.q8(), x.data(), 1, 64, y, 3, cpu::CpuIsa::Avx512), KernelStatus::InvalidArgument);
}

class LutQ8KernelsVnni : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu::cpu_supports(cpu::CpuIsa::Avx512) || !cpu::cpu_has_avx512_vnni())
      GTEST_SKIP() << "this CPU lacks AVX-512 VNNI";
  }
};

// 8 and 64 columns (a partial chunk only), 120, 128 (one chunk), 576 (SmolLM2), 1000 and
// 4496; 1, 3, 4, 5 and 17 rows (blocks of 4, 2 and 1 rows, and what is left of them).
TEST_F(LutQ8KernelsVnni, GemvWithinRoundingBoundOfReferenceAndQuantizationBoundOfExact) {
  uint32_t seed = 10;
  for (int bits : {4, 3})
    for (int sparse_bits : {0, 16, 32})
      for (int64_t rows : {1, 3, 4, 5, 17})
        for (int64_t cols : {8, 64, 120, 128, 576, 1000, 4496}) {
          const Q8Lut w(bits, rows, cols, sparse_bits, ++seed);
          if (!cpu::lut_q8_supported(w.view(), cpu::CpuIsa::Avx512)) {
            ASSERT_EQ(bits, 3) << "4-bit codes need only VNNI";
            continue;  // 3-bit codes also need VBMI
          }
          const int64_t max_m = 2 * cpu::kMaxGemvRows + 1, x_stride = cols + test::kXPadding;
          const std::vector<float> x = test::activations(max_m, cols, x_stride, seed);
          std::vector<float> ref(static_cast<size_t>(max_m * rows)), exact(ref.size());
          ASSERT_EQ(cpu::lut_gemv_q8_reference(w.view(), w.q8(), x.data(), max_m, x_stride, ref.data(), rows),
                    KernelStatus::Ok);
          ASSERT_EQ(cpu::lut_matmul_reference(w.view(), x.data(), max_m, x_stride, exact.data(), rows),
                    KernelStatus::Ok);
          for (int64_t m = 1; m <= max_m; m = m == cpu::kMaxGemvRows + 1 ? max_m : m + 1)
          for (bool stream : {false, true}) {
            if (stream && sparse_bits == 0) continue;
            SCOPED_TRACE("lut" + std::to_string(bits) + " [" + std::to_string(rows) + " x " + std::to_string(cols) +
                         "] csr " + std::to_string(sparse_bits) + (stream ? " (stream)" : "") +
                         " m=" + std::to_string(m));
            test::GuardedOutput y(m, rows, rows + test::kYPadding);
            ASSERT_EQ(cpu::lut_gemv_q8(w.view(), w.q8(stream), x.data(), m, x_stride, y.data(), y.stride(),
                                       cpu::CpuIsa::Avx512),
                      KernelStatus::Ok);
            ASSERT_TRUE(y.guards_intact());
            for (int64_t i = 0; i < m; ++i) {
              const float* xi = x.data() + i * x_stride;
              const QuantizedRow xq(xi, cols);
              for (int64_t n = 0; n < rows; ++n) {
                const float r = ref[static_cast<size_t>(i * rows + n)], got = y.at(i, n);
                ASSERT_LE(std::fabs(static_cast<double>(got) - r), kernel_bound(w, xq, xi, n, r))
                    << "y[" << i << ", " << n << "] = " << got << ", reference " << r;
                if (m == 1) {
                  const double e = exact[static_cast<size_t>(i * rows + n)];
                  ASSERT_LE(std::fabs(static_cast<double>(r) - e), quantization_bound(w, xq, xi, n, r, e))
                      << "reference " << r << " vs exact " << e;
                }
              }
            }
          }
        }
}

// lut_gemm_q8 (the prefill GEMM): 4- and 3-bit codes (3-bit where the CPU has VBMI); 1, 5,
// 32, 33 and 70 weight rows (tiles of 32 and what is left), 32 to 1024 columns (3-bit: a
// chunk of 64 and half of one), dense and with CSR parts, 1 to 40 rows of x (150 at 1024
// columns, several blocks of the sparse part); within the
// rounding bound of the same reference as the GEMV, nothing written outside y, and the same
// bits on 1 and 2 threads.
TEST_F(LutQ8KernelsVnni, GemmWithinRoundingBoundOfReference) {
  uint32_t seed = 500;
  for (int bits : {4, 3})
  for (int sparse_bits : {0, 16, 32})
    for (int64_t rows : {1, 5, 32, 33, 70})
      for (int64_t cols : {32, 96, 576, 1024}) {
        const Q8Lut w(bits, rows, cols, sparse_bits, ++seed);
        if (bits == 3 && !cpu::cpu_has_avx512_vbmi()) {
          ASSERT_FALSE(cpu::lut_gemm_q8_supported(w.view(), cpu::CpuIsa::Avx512));
          continue;
        }
        ASSERT_TRUE(cpu::lut_gemm_q8_supported(w.view(), cpu::CpuIsa::Avx512));
        // 150 rows of x at 1024 columns: the sparse part takes them in blocks of 64 (+ 22).
        const int64_t max_m = cols == 1024 ? 150 : 40, x_stride = cols + test::kXPadding;
        const std::vector<float> x = test::activations(max_m, cols, x_stride, seed);
        std::vector<float> ref(static_cast<size_t>(max_m * rows));
        ASSERT_EQ(cpu::lut_gemv_q8_reference(w.view(), w.q8(), x.data(), max_m, x_stride, ref.data(), rows),
                  KernelStatus::Ok);
        for (int64_t m : {int64_t{1}, int64_t{7}, int64_t{13}, max_m}) {
          SCOPED_TRACE("lut" + std::to_string(bits) + " [" + std::to_string(rows) + " x " + std::to_string(cols) +
                       "] csr " + std::to_string(sparse_bits) + " m=" + std::to_string(m));
          test::GuardedOutput y(m, rows, rows + test::kYPadding);
          ASSERT_EQ(cpu::lut_gemm_q8(w.view(), w.q8(), x.data(), m, x_stride, y.data(), y.stride(), cpu::CpuIsa::Avx512),
                    KernelStatus::Ok);
          ASSERT_TRUE(y.guards_intact());
          const double blocks = static_cast<double>(cols / cpu::kQ8BlockCols);
          for (int64_t i = 0; i < m; ++i) {
            const float* xi = x.data() + i * x_stride;
            const QuantizedRow xq(xi, cols);
            for (int64_t n = 0; n < rows; ++n) {
              const float r = ref[static_cast<size_t>(i * rows + n)], got = y.at(i, n);
              ASSERT_LE(std::fabs(static_cast<double>(got) - r), kernel_bound(w, xq, xi, n, r, 2 * blocks))
                  << "y[" << i << ", " << n << "] = " << got << ", reference " << r;
            }
          }
          if (m == max_m) {
            const int threads = omp_get_max_threads();
            omp_set_num_threads(threads == 1 ? 2 : 1);
            test::GuardedOutput again(m, rows, rows + test::kYPadding);
            ASSERT_EQ(cpu::lut_gemm_q8(w.view(), w.q8(), x.data(), m, x_stride, again.data(), again.stride(),
                                       cpu::CpuIsa::Avx512),
                      KernelStatus::Ok);
            omp_set_num_threads(threads);
            for (int64_t i = 0; i < m; ++i)
              for (int64_t n = 0; n < rows; ++n) ASSERT_EQ(again.at(i, n), y.at(i, n)) << "y[" << i << ", " << n << "]";
          }
        }
      }
}

TEST(LutQ8Kernels, GemmTakesWholeBlocksAndThreeBitOnlyWithVbmi) {
  const Q8Lut w3(3, 3, 64, 0, 8), odd(4, 3, 40, 0, 9), odd3(3, 3, 40, 0, 11), w4(4, 3, 64, 0, 10);
  std::vector<float> x(64, 1.0f), y(3);
  const bool vnni = cpu::cpu_supports(cpu::CpuIsa::Avx512) && cpu::cpu_has_avx512_vnni();
  EXPECT_EQ(cpu::lut_gemm_q8_supported(w3.view(), cpu::CpuIsa::Avx512), vnni && cpu::cpu_has_avx512_vbmi());
  EXPECT_FALSE(cpu::lut_gemm_q8_supported(odd.view(), cpu::CpuIsa::Avx512));  // 40 columns: not whole blocks
  EXPECT_FALSE(cpu::lut_gemm_q8_supported(odd3.view(), cpu::CpuIsa::Avx512));
  EXPECT_FALSE(cpu::lut_gemm_q8_supported(w4.view(), cpu::CpuIsa::Avx2));
  EXPECT_FALSE(cpu::lut_gemm_q8_supported(w3.view(), cpu::CpuIsa::Avx2));
  EXPECT_EQ(cpu::lut_gemm_q8(odd.view(), odd.q8(), x.data(), 1, 40, y.data(), 3, cpu::CpuIsa::Avx512),
            KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::lut_gemm_q8(odd3.view(), odd3.q8(), x.data(), 1, 40, y.data(), 3, cpu::CpuIsa::Avx512),
            KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::lut_gemm_q8(w3.view(), w3.q8(), x.data(), 1, 64, y.data(), 3, cpu::CpuIsa::Avx2),
            KernelStatus::IsaUnavailable);
}

// The packed codes end right before an unreadable page: a kernel (the GEMV, and the GEMM
// where the columns are whole blocks) reading past the last row's codes crashes; it must
// give the same bits as from an ordinary buffer.
TEST_F(LutQ8KernelsVnni, ReadsNothingPastTheCodes) {
  for (int bits : {4, 3})
    for (int64_t cols : {8, 64, 72, 120, 128, 576, 1000})
      for (int64_t rows : {int64_t{1}, int64_t{5}}) {
        const Q8Lut w(bits, rows, cols, 16, 77);
        if (!cpu::lut_q8_supported(w.view(), cpu::CpuIsa::Avx512)) continue;  // 3-bit without VBMI
        SCOPED_TRACE("lut" + std::to_string(bits) + " [" + std::to_string(rows) + " x " + std::to_string(cols) + "]");
        const test::BytesBeforeGuardPage words(w.words.data(), w.words.size() * sizeof(uint32_t));
        cpu::LutWeightsView v = w.view();
        v.words = words.as<uint32_t>();
        const int64_t m = 2;
        const std::vector<float> x = test::activations(m, cols, cols, 3);
        std::vector<float> got(static_cast<size_t>(m * rows)), want(got.size());
        EXPECT_EQ(cpu::lut_gemv_q8(v, w.q8(), x.data(), m, cols, got.data(), rows, cpu::CpuIsa::Avx512), KernelStatus::Ok);
        EXPECT_EQ(cpu::lut_gemv_q8(w.view(), w.q8(), x.data(), m, cols, want.data(), rows, cpu::CpuIsa::Avx512),
                  KernelStatus::Ok);
        EXPECT_EQ(got, want);
        if (!cpu::lut_gemm_q8_supported(v, cpu::CpuIsa::Avx512)) continue;  // not whole blocks
        EXPECT_EQ(cpu::lut_gemm_q8(v, w.q8(), x.data(), m, cols, got.data(), rows, cpu::CpuIsa::Avx512), KernelStatus::Ok);
        EXPECT_EQ(cpu::lut_gemm_q8(w.view(), w.q8(), x.data(), m, cols, want.data(), rows, cpu::CpuIsa::Avx512),
                  KernelStatus::Ok);
        EXPECT_EQ(got, want);
      }
}

TEST_F(LutQ8KernelsVnni, GemvIsBitIdenticalOnAnyThreadCount) {
  const int saved = omp_get_max_threads();
  for (int bits : {4, 3})
    for (int64_t m : {int64_t{1}, int64_t{5}})
    for (bool stream : {false, true}) {
      const Q8Lut w(bits, 301, 576, 32, 91);
      if (!cpu::lut_q8_supported(w.view(), cpu::CpuIsa::Avx512)) continue;  // 3-bit without VBMI
      const std::vector<float> x = test::activations(m, w.cols, w.cols, 13);
      std::vector<std::vector<float>> y;
      for (int threads : {1, 2, 3}) {
        omp_set_num_threads(threads);
        y.emplace_back(static_cast<size_t>(m * w.rows));
        ASSERT_EQ(cpu::lut_gemv_q8(w.view(), w.q8(stream), x.data(), m, w.cols, y.back().data(), w.rows,
                                   cpu::CpuIsa::Avx512),
                  KernelStatus::Ok);
      }
      EXPECT_EQ(y[0], y[1]);
      EXPECT_EQ(y[0], y[2]);
    }
  omp_set_num_threads(saved);
}

}  // namespace
}  // namespace fsq
