// The AVX-512 VNNI/VBMI halves of lut_gemv_q8 (lut_q8_avx512vnni.cpp, lut_q8_avx512vbmi.cpp)
// on any x86-64 CPU: this executable compiles those two files with SIMDe's portable
// AVX-512 (tests/support/simde_avx512.h) in place of the real ones, and calls their row
// functions directly, as lut_gemv_q8's dispatcher does on an AVX-512 machine. So the 4-bit
// codes, the 3-bit packed words and the 3-bit bit planes are checked against the scalar spec
// (lut_gemv_q8_reference) within the kernel's rounding bound on machines that have only AVX2,
// where lut_q8_kernels_test.cpp skips them. Speed means nothing here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "lut_q8_test_support.h"
#include "runtime/cpu/lut_q8_isa.h"
#include "runtime/cpu/q8_panel.h"
#include "uniform_test_support.h"

namespace fsq {
namespace {

using test::kernel_bound;
using test::Q8Lut;
using test::QuantizedRow;

// y[i, n] for the m rows of x (m <= kMaxGemvRows) through the emulated row function, set up
// as lut_gemv_q8 sets it up: the panel in the 4-bit layout for 4-bit codes and bit planes,
// in column order for packed 3-bit codes.
std::vector<float> emulated_gemv(const Q8Lut& w, const cpu::LutQ8Tables& t, const float* x, int64_t m,
                                 int64_t x_stride) {
  const cpu::LutWeightsView view = w.view();
  cpu::UniformWeightsView panel_view;
  panel_view.rows = view.rows;
  panel_view.cols = view.cols;
  panel_view.bits = view.bits == 4 || t.codes3 != nullptr ? 4 : 8;
  panel_view.group_cols = view.cols;
  cpu::Q8Panel panel(panel_view, m);
  panel.fill(x, m, x_stride);
  std::vector<float> y(static_cast<size_t>(m * view.rows)), sparse_sums(y.size());
  cpu::LutQ8Batch batch;
  batch.w = &view;
  batch.t = &t;
  batch.m = m;
  batch.q8 = panel.activations();
  batch.x = x;
  batch.x_stride = x_stride;
  batch.y = y.data();
  batch.y_stride = view.rows;
  if (t.sparse_rows != nullptr) batch.sparse_sums = sparse_sums.data();
  (view.bits == 4 ? cpu::lut_q8_rows_avx512vnni : cpu::lut_q8_rows_avx512vbmi)(batch, 0, view.rows);
  return y;
}

// Odd shapes (a chunk's part only, whole chunks, SmolLM2's 576, tails of 104 and 16 columns),
// row counts that leave blocks of 4, 2 and 1 rows, every batch size, dense and with CSR parts
// (row by row, as one stream and as slices).
TEST(LutQ8EmulatedAvx512, RowsWithinRoundingBoundOfReference) {
  uint32_t seed = 900;
  for (int bits : {4, 3})
    for (bool planes : {false, true})
      for (int sparse_bits : {0, 16, 32})
        for (int64_t rows : {1, 5, 7})
          for (int64_t cols : {8, 64, 120, 128, 576, 1000, 4496}) {
            if (planes && bits != 3) continue;
            const Q8Lut w(bits, rows, cols, sparse_bits, ++seed);
            const int64_t max_m = cpu::kMaxGemvRows, x_stride = cols + test::kXPadding;
            const std::vector<float> x = test::activations(max_m, cols, x_stride, seed);
            for (int sparse_path = 0; sparse_path < 3; ++sparse_path) {  // row by row, stream, slices
              const bool stream = sparse_path == 1, sliced = sparse_path == 2;
              if ((stream && sparse_bits == 0) || (sliced && sparse_bits != 16)) continue;
              const cpu::LutQ8Tables t = w.q8(stream, planes, sliced);
              std::vector<float> ref(static_cast<size_t>(max_m * rows));
              ASSERT_EQ(cpu::lut_gemv_q8_reference(w.view(), t, x.data(), max_m, x_stride, ref.data(), rows),
                        cpu::KernelStatus::Ok);
              for (int64_t m : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{5}, max_m}) {
                SCOPED_TRACE("lut" + std::to_string(bits) + (planes ? " bit planes" : "") + " [" +
                             std::to_string(rows) + " x " + std::to_string(cols) + "] csr " +
                             std::to_string(sparse_bits) + (stream ? " (stream)" : "") + (sliced ? " (slices)" : "") + " m=" + std::to_string(m));
                const std::vector<float> y = emulated_gemv(w, t, x.data(), m, x_stride);
                for (int64_t i = 0; i < m; ++i) {
                  const float* xi = x.data() + i * x_stride;
                  const QuantizedRow xq(xi, cols);
                  for (int64_t n = 0; n < rows; ++n) {
                    const float r = ref[static_cast<size_t>(i * rows + n)], got = y[static_cast<size_t>(i * rows + n)];
                    ASSERT_LE(std::fabs(static_cast<double>(got) - r), kernel_bound(w, xq, xi, n, r))
                        << "y[" << i << ", " << n << "] = " << got << ", reference " << r;
                  }
                }
              }
            }
          }
}

}  // namespace
}  // namespace fsq
