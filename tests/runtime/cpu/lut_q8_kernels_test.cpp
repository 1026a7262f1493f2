// lut_gemv_q8 (3- and 4-bit LUT weights on int8 activations) against its spec and the exact
// float product: the int8 tables round each centroid to its row's grid; the AVX-512 VNNI
// and the AVX2 kernels stay within float-rounding bounds of the double reference on odd shapes, batch
// sizes 1..9 and 17, dense and with CSR parts (16- and 32-bit columns), 3-bit codes from the
// packed words and from their bit planes (whose layout a scalar reading checks), without writing
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
#include "lut_q8_test_support.h"
#include "uniform_test_support.h"

namespace fsq {
namespace {

using cpu::KernelStatus;
using cpu::LutColType;
using test::kernel_bound;
using test::kU;
using test::Q8Lut;
using test::QuantizedRow;

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

// Column k's code read back from a row of bit planes as lut_q8_kernels.h lays them out.
uint32_t code_from_planes(const uint8_t* row, int64_t cols, int64_t k) {
  const int64_t k0 = k / 128 * 128, b = (k - k0) / 2, odd = (k - k0) % 2;
  const uint8_t* chunk = row + k0 / 128 * 48;
  const bool full = cols - k0 > 64;
  const int64_t qwords = full ? 4 : 2;
  uint64_t low, high;
  std::memcpy(&low, chunk + 8 * ((b / 8) % qwords), 8);
  if (full) {
    std::memcpy(&high, chunk + 32 + 8 * odd, 8);
  } else {
    uint32_t h;
    std::memcpy(&h, chunk + 16 + 4 * odd, 4);
    high = h;
  }
  const int64_t bit = 16 * (b / (8 * qwords)) + 2 * (b % 8) + 32 * odd;
  return static_cast<uint32_t>(((low >> bit) & 3) | ((high >> b) & 1) << 2);
}

// Every column's code where the layout puts it, and zeros past the row's end: full chunks,
// a last chunk of at most 64 columns (8, 64, 576) and a longer one (120, 1000).
TEST(LutQ8Codes3, BitPlanesHoldEachColumnsCode) {
  for (int64_t cols : {8, 64, 120, 128, 576, 1000}) {
    const Q8Lut w(3, 3, cols, 0, 21);
    const int64_t row_bytes = cpu::lut_q8_codes3_row_bytes(cols);
    ASSERT_EQ(static_cast<int64_t>(w.codes3.size()), 3 * row_bytes);
    EXPECT_GE(row_bytes, cols * 3 / 8);
    for (int64_t n = 0; n < w.rows; ++n) {
      const uint8_t* row = w.codes3.data() + n * row_bytes;
      for (int64_t k = 0; k < cols; ++k)
        ASSERT_EQ(code_from_planes(row, cols, k), w.codes[static_cast<size_t>(n * cols + k)])
            << cols << " columns, row " << n << " column " << k;
      // Columns the layout holds: whole chunks of 128, a last one of at most 64 as 64.
      const int64_t laid_out = cols % 128 == 0 || cols % 128 > 64 ? (cols + 127) / 128 * 128 : cols / 128 * 128 + 64;
      for (int64_t k = cols; k < laid_out; ++k)
        ASSERT_EQ(code_from_planes(row, cols, k), 0u) << cols << " columns, padding column " << k;
    }
  }
  EXPECT_EQ(cpu::lut_q8_codes3_row_bytes(576), 216);  // as packed: 4 chunks of 48 and one of 24
  EXPECT_EQ(cpu::lut_q8_codes3_row_bytes(4096), 4096 * 3 / 8);
}

TEST(LutQ8Kernels, SupportedOnAvx512VnniOrFourBitAvx2AndWholeLanes) {
  Q8Lut w(4, 3, 64, 0, 4), w3(3, 3, 64, 0, 5);
  cpu::LutWeightsView v = w.view();
  EXPECT_EQ(cpu::lut_q8_supported(v, cpu::CpuIsa::Avx2), cpu::cpu_supports(cpu::CpuIsa::Avx2));
  EXPECT_FALSE(cpu::lut_q8_supported(w3.view(), cpu::CpuIsa::Avx2));  // 3-bit codes: AVX-512 VBMI only
  EXPECT_FALSE(cpu::lut_q8_supported(v, cpu::CpuIsa::Scalar));
  EXPECT_EQ(cpu::lut_q8_supported(v, cpu::CpuIsa::Avx512),
            cpu::cpu_supports(cpu::CpuIsa::Avx512) && cpu::cpu_has_avx512_vnni());
  v.cols = 60;  // not a multiple of 8
  v.words_per_row = packed_words_per_row(4, 60);
  EXPECT_FALSE(cpu::lut_q8_supported(v, cpu::CpuIsa::Avx512));
  EXPECT_FALSE(cpu::lut_q8_supported(v, cpu::CpuIsa::Avx2));
  float y[3];
  const std::vector<float> x(64, 1.0f);
  EXPECT_EQ(cpu::lut_gemv_q8(v, w.q8(), x.data(), 1, 64, y, 3, cpu::CpuIsa::Avx512), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::lut_gemv_q8(w3.view(), w3.q8(), x.data(), 1, 64, y, 3, cpu::CpuIsa::Avx2), KernelStatus::IsaUnavailable);
}

// The ISAs lut_gemv_q8 has a kernel for on this CPU.
std::vector<cpu::CpuIsa> gemv_isas() {
  std::vector<cpu::CpuIsa> isas;
  if (cpu::cpu_supports(cpu::CpuIsa::Avx512) && cpu::cpu_has_avx512_vnni()) isas.push_back(cpu::CpuIsa::Avx512);
  if (cpu::cpu_supports(cpu::CpuIsa::Avx2)) isas.push_back(cpu::CpuIsa::Avx2);
  return isas;
}

class LutQ8Gemv : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gemv_isas().empty()) GTEST_SKIP() << "this CPU has neither AVX-512 VNNI nor AVX2";
  }
};

class LutQ8KernelsVnni : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu::cpu_supports(cpu::CpuIsa::Avx512) || !cpu::cpu_has_avx512_vnni())
      GTEST_SKIP() << "this CPU lacks AVX-512 VNNI";
  }
};

// 8 and 64 columns (a partial chunk only), 120, 128 (one chunk), 576 (SmolLM2), 1000 and
// 4496; 1, 3, 4, 5 and 17 rows (blocks of 4, 2 and 1 rows, and what is left of them).
TEST_F(LutQ8Gemv, GemvWithinRoundingBoundOfReferenceAndQuantizationBoundOfExact) {
  uint32_t seed = 10;
  for (const cpu::CpuIsa isa : gemv_isas())
  for (int bits : {4, 3})
    for (int sparse_bits : {0, 16, 32})
      for (int64_t rows : {1, 3, 4, 5, 17})
        for (int64_t cols : {8, 64, 120, 128, 576, 1000, 4496}) {
          const Q8Lut w(bits, rows, cols, sparse_bits, ++seed);
          if (!cpu::lut_q8_supported(w.view(), isa)) {
            ASSERT_EQ(bits, 3) << "4-bit codes need only VNNI or AVX2";
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
          for (bool stream : {false, true})
          for (bool planes : {false, true})
          for (bool sliced : {false, true}) {
            if ((stream && sparse_bits == 0) || (planes && bits != 3) || (sliced && sparse_bits != 16)) continue;
            SCOPED_TRACE(std::string(cpu::cpu_isa_name(isa)) + " lut" + std::to_string(bits) + " [" +
                         std::to_string(rows) + " x " + std::to_string(cols) + "] csr " + std::to_string(sparse_bits) +
                         (stream ? " (stream)" : "") + (planes ? " bit planes" : "") + (sliced ? " slices" : "") +
                         " m=" + std::to_string(m));
            test::GuardedOutput y(m, rows, rows + test::kYPadding);
            ASSERT_EQ(cpu::lut_gemv_q8(w.view(), w.q8(stream, planes, sliced), x.data(), m, x_stride, y.data(),
                                       y.stride(), isa),
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
TEST_F(LutQ8Gemv, ReadsNothingPastTheCodes) {
  for (const cpu::CpuIsa isa : gemv_isas())
  for (int bits : {4, 3})
    for (int64_t cols : {8, 64, 72, 120, 128, 576, 1000})
      for (int64_t rows : {int64_t{1}, int64_t{5}}) {
        const Q8Lut w(bits, rows, cols, 16, 77);
        if (!cpu::lut_q8_supported(w.view(), isa)) continue;  // 3-bit without VBMI
        SCOPED_TRACE(std::string(cpu::cpu_isa_name(isa)) + " lut" + std::to_string(bits) + " [" +
                     std::to_string(rows) + " x " + std::to_string(cols) + "]");
        const test::BytesBeforeGuardPage words(w.words.data(), w.words.size() * sizeof(uint32_t));
        cpu::LutWeightsView v = w.view();
        v.words = words.as<uint32_t>();
        // 3-bit codes' bit planes, before an unreadable page as well.
        const test::BytesBeforeGuardPage planes(bits == 3 ? static_cast<const void*>(w.codes3.data()) : w.words.data(),
                                                bits == 3 ? w.codes3.size() : 0);
        cpu::LutQ8Tables guarded = w.q8(false, true);
        if (bits == 3) guarded.codes3 = planes.as<uint8_t>();
        const int64_t m = 2;
        const std::vector<float> x = test::activations(m, cols, cols, 3);
        std::vector<float> got(static_cast<size_t>(m * rows)), want(got.size());
        EXPECT_EQ(cpu::lut_gemv_q8(v, w.q8(), x.data(), m, cols, got.data(), rows, isa), KernelStatus::Ok);
        EXPECT_EQ(cpu::lut_gemv_q8(w.view(), w.q8(), x.data(), m, cols, want.data(), rows, isa),
                  KernelStatus::Ok);
        EXPECT_EQ(got, want);
        if (bits == 3) {  // the GEMV on the bit planes
          EXPECT_EQ(cpu::lut_gemv_q8(w.view(), guarded, x.data(), m, cols, got.data(), rows, isa),
                    KernelStatus::Ok);
          EXPECT_EQ(cpu::lut_gemv_q8(w.view(), w.q8(false, true), x.data(), m, cols, want.data(), rows,
                                     isa),
                    KernelStatus::Ok);
          EXPECT_EQ(got, want);
        }
        // The GEMM: AVX-512 VNNI only, on whole blocks.
        if (isa != cpu::CpuIsa::Avx512 || !cpu::lut_gemm_q8_supported(v, isa)) continue;
        EXPECT_EQ(cpu::lut_gemm_q8(v, w.q8(), x.data(), m, cols, got.data(), rows, isa), KernelStatus::Ok);
        EXPECT_EQ(cpu::lut_gemm_q8(w.view(), w.q8(), x.data(), m, cols, want.data(), rows, isa),
                  KernelStatus::Ok);
        EXPECT_EQ(got, want);
      }
}

// The slices hold each row's nonzeros in order, once, in one lane; rows sorted by count
// within each window of 64; steps past a lane's count hold column 0 and value 0.
TEST(LutQ8SparseSlices, HoldEveryNonzeroOnceInItsRowsOrder) {
  for (int64_t rows : {2, 17, 64, 150}) {  // row 0 has no nonzeros (Q8Lut)
    const Q8Lut w(4, rows, 1000, 16, 5);
    const cpu::LutQ8SparseSlices* s = w.slices.view();
    ASSERT_NE(s, nullptr);
    ASSERT_EQ(s->slices, (rows + 15) / 16);
    std::vector<int> seen(static_cast<size_t>(rows), 0);
    for (int64_t sl = 0; sl < s->slices; ++sl) {
      const int32_t length = s->slice_steps[sl + 1] - s->slice_steps[sl];
      for (int64_t l = 0; l < cpu::kLutQ8SliceRows; ++l) {
        const int64_t lane = sl * cpu::kLutQ8SliceRows + l;
        const int32_t row = s->lane_rows[lane], count = s->lane_counts[lane];
        if (row < 0) {
          EXPECT_EQ(count, 0);
          continue;
        }
        ++seen[static_cast<size_t>(row)];
        EXPECT_EQ(row / 64, sl / 4) << "row " << row << " left its window";
        ASSERT_EQ(count, w.row_ptr[static_cast<size_t>(row + 1)] - w.row_ptr[static_cast<size_t>(row)]);
        ASSERT_LE(count, length);
        if (l > 0 && s->lane_rows[lane - 1] >= 0) {
          EXPECT_LE(count, s->lane_counts[lane - 1]);
        }
        for (int32_t j = 0; j < length; ++j) {
          const uint16_t* step = s->steps + (int64_t{s->slice_steps[sl]} + j) * 32;
          const size_t e = static_cast<size_t>(w.row_ptr[static_cast<size_t>(row)] + j);
          EXPECT_EQ(step[l], j < count ? w.col16[e] : 0);
          EXPECT_EQ(step[16 + l], j < count ? w.val[e] : 0);
        }
      }
    }
    for (int64_t n = 0; n < rows; ++n) EXPECT_EQ(seen[static_cast<size_t>(n)], 1) << "row " << n;
  }
  EXPECT_EQ(Q8Lut(4, 5, 64, 32, 1).slices.view(), nullptr) << "32-bit columns have no slices";
  EXPECT_EQ(Q8Lut(4, 5, 64, 0, 1).slices.view(), nullptr) << "no CSR part, no slices";
  EXPECT_EQ(Q8Lut(4, 5, 64, 16, 1).slices.view(), nullptr) << "~2 nonzeros per row: the stream's";
  EXPECT_EQ(Q8Lut(4, 5, 4496, 16, 1).slices.view(), nullptr) << "past 4096 columns: row by row";
}

TEST_F(LutQ8Gemv, GemvIsBitIdenticalOnAnyThreadCount) {
  const int saved = omp_get_max_threads();
  for (const cpu::CpuIsa isa : gemv_isas())
  for (int bits : {4, 3})
    for (int64_t m : {int64_t{1}, int64_t{5}})
    for (bool stream : {false, true})
    for (bool planes : {false, true})
    for (bool sliced : {false, true}) {
      if (planes && bits != 3) continue;
      // Slices need 16-bit columns. 3 threads split 301 rows at 112 and 224, inside windows.
      const Q8Lut w(bits, 301, 576, sliced ? 16 : 32, 91);
      if (!cpu::lut_q8_supported(w.view(), isa)) continue;  // 3-bit without VBMI
      const std::vector<float> x = test::activations(m, w.cols, w.cols, 13);
      std::vector<std::vector<float>> y;
      for (int threads : {1, 2, 3}) {
        omp_set_num_threads(threads);
        y.emplace_back(static_cast<size_t>(m * w.rows));
        ASSERT_EQ(cpu::lut_gemv_q8(w.view(), w.q8(stream, planes, sliced), x.data(), m, w.cols, y.back().data(),
                                   w.rows, isa),
                  KernelStatus::Ok);
      }
      EXPECT_EQ(y[0], y[1]);
      EXPECT_EQ(y[0], y[2]);
    }
  omp_set_num_threads(saved);
}

}  // namespace
}  // namespace fsq
