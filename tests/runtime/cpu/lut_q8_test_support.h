// The int8-activation LUT GEMV tests' matrices and rounding bound (lut_q8_kernels_test.cpp,
// and lut_q8_emulated_test.cpp, which runs the AVX-512 kernels through SIMDe).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "common/half.h"
#include "formats/quant/bitpack.h"
#include "runtime/cpu/lut_q8_kernels.h"
#include "runtime/cpu/lut_q8_slice_copy.h"
#include "runtime/cpu/uniform_q8_kernels.h"

namespace fsq::test {

using cpu::LutColType;
inline constexpr double kU = 0x1p-24;  // float's unit roundoff

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
  std::vector<uint8_t> codes3;        // 3-bit codes in the GEMV's bit planes
  cpu::LutQ8SliceCopy slices;         // the CSR part as the AVX-512 GEMV's slices

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
    slices = cpu::LutQ8SliceCopy(view());
    if (bits == 3) {
      codes3.resize(static_cast<size_t>(cpu::lut_q8_codes3_bytes(view())));
      cpu::prepare_lut_q8_codes3(view(), codes3.data());
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
  // stream: with the nonzeros' rows (the CSR part added as one stream), where there is a CSR
  // part; planes: with the 3-bit codes' bit planes, where the codes are 3-bit.
  // sliced: with the CSR part's slices, where there is a CSR part with 16-bit columns.
  cpu::LutQ8Tables q8(bool stream = false, bool planes = false, bool sliced = false) const {
    return {tables.data(), scales.data(), stream && !sparse_rows.empty() ? sparse_rows.data() : nullptr,
            planes && !codes3.empty() ? codes3.data() : nullptr, sliced ? slices.view() : nullptr};
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
// S_sparse = sum |x * value| over the row's nonzeros (summed in float, then added). The AVX2
// kernel (8 lanes in 3 levels, a term per 64 columns, signed entries with no bias term)
// rounds no more often: the same bound holds.
// The prefill GEMM (lut_gemm_q8) rounds once per block of 32 columns where the GEMV rounds
// once per chunk: it passes `blocks` for `chunks` (2 roundings per block: the product
// s * d and the FMA).
inline double kernel_bound(const Q8Lut& w, const QuantizedRow& xq, const float* x, int64_t n, float ref,
                    double steps = -1) {
  double a = 0.0, b = 0.0;
  for (int64_t k = 0; k < w.cols; ++k) {
    const double q = std::fabs(static_cast<double>(xq.q[static_cast<size_t>(k)])) * xq.scale(k);
    a += w.tables[static_cast<size_t>(n * 16 + w.codes[static_cast<size_t>(n * w.cols + k)])] * q;
    b += 128.0 * q;
  }
  // GEMV chunks of 128 columns (both widths); counted as 64 wide, which only widens the bound.
  const double chunks = steps >= 0 ? steps : static_cast<double>((w.cols + 63) / 64);
  return (chunks + 8) * kU * w.scales[static_cast<size_t>(n)] * (a + b) +
         static_cast<double>(w.nnz(n) + 5) * kU * w.sparse_magnitude(n, x) + kU * std::fabs(static_cast<double>(ref));
}

}  // namespace fsq::test
