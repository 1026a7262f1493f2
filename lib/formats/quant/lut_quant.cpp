#include "formats/quant/lut_quant.h"

#include <cmath>

#include "common/error.h"
#include "common/half.h"

namespace fsq {
namespace {

void expect_size(size_t got, int64_t want, const std::string& what, const std::string& where) {
  if (static_cast<int64_t>(got) != want)
    throw Error(where, what + " has " + std::to_string(got) + " entries, expected " + std::to_string(want));
}

void expect_finite_f16(const std::vector<uint16_t>& v, const std::string& what, const std::string& where) {
  for (size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(f16_to_f32(v[i])))
      throw Error(where, what + " entry " + std::to_string(i) + " is not finite");
}

void validate_csr(const LutMatrix& m, const std::string& where) {
  if (!m.has_sparse()) {
    if (!m.col.empty() || !m.val.empty()) throw Error(where, "sparse columns/values without row pointers");
    return;
  }
  expect_size(m.row_ptr.size(), m.rows + 1, "sparse row_ptr", where);
  if (m.col.size() != m.val.size())
    throw Error(where, "sparse part has " + std::to_string(m.col.size()) + " columns but " +
                           std::to_string(m.val.size()) + " values");
  if (m.row_ptr.front() != 0) throw Error(where, "sparse row_ptr[0] is " + std::to_string(m.row_ptr.front()) + ", not 0");
  if (m.row_ptr.back() != m.nnz())
    throw Error(where, "sparse row_ptr ends at " + std::to_string(m.row_ptr.back()) + " but there are " +
                           std::to_string(m.nnz()) + " nonzeros");
  for (int64_t r = 0; r < m.rows; ++r) {
    const int32_t begin = m.row_ptr[r], end = m.row_ptr[r + 1];
    if (end < begin) throw Error(where, "sparse row_ptr decreases at row " + std::to_string(r));
    // Before reading the row: a pointer past nnz would read beyond col (a later decrease
    // back to nnz is only found at the next row).
    if (end > m.nnz())
      throw Error(where, "sparse row_ptr[" + std::to_string(r + 1) + "] = " + std::to_string(end) + " exceeds the " +
                             std::to_string(m.nnz()) + " nonzeros");
    for (int32_t i = begin; i < end; ++i) {
      if (m.col[i] < 0 || m.col[i] >= m.cols)
        throw Error(where, "sparse column " + std::to_string(m.col[i]) + " in row " + std::to_string(r) +
                               " is outside 0.." + std::to_string(m.cols - 1));
      if (i > begin && m.col[i] <= m.col[i - 1])
        throw Error(where, "sparse columns of row " + std::to_string(r) + " are not strictly increasing");
    }
  }
  expect_finite_f16(m.val, "sparse value", where);
}

}  // namespace

std::string lut_quant_name(int bits) {
  if (!lut_bits_supported(bits)) throw Error("quant type", "LUT codes of " + std::to_string(bits) + " bits; supported: 3, 4");
  return "lut" + std::to_string(bits);
}

int lut_bits_of(std::string_view name) {
  if (name == "lut3") return 3;
  if (name == "lut4") return 4;
  return 0;
}

void validate_lut_matrix(const LutMatrix& m, const std::string& where) {
  if (!lut_bits_supported(m.bits)) throw Error(where, "LUT codes of " + std::to_string(m.bits) + " bits; supported: 3, 4");
  if (m.rows <= 0 || m.cols <= 0)
    throw Error(where, "shape [" + std::to_string(m.rows) + ", " + std::to_string(m.cols) + "] is empty");
  expect_size(m.codes.size(), m.rows * m.cols, "codes", where);
  expect_size(m.lut.size(), m.rows * m.levels(), "lookup table", where);
  for (size_t i = 0; i < m.codes.size(); ++i)
    if (m.codes[i] >= m.levels())
      throw Error(where, "code " + std::to_string(m.codes[i]) + " at " + std::to_string(i) + " exceeds " +
                             std::to_string(m.levels() - 1));
  expect_finite_f16(m.lut, "lookup table", where);
  validate_csr(m, where);
}

void dequantize_lut(const LutMatrix& m, float* out) {
  validate_lut_matrix(m, "LUT matrix");
  const int64_t levels = m.levels();
  for (int64_t r = 0; r < m.rows; ++r) {
    const uint16_t* lut = m.lut.data() + r * levels;
    const uint8_t* codes = m.codes.data() + r * m.cols;
    float* row = out + r * m.cols;
    for (int64_t c = 0; c < m.cols; ++c) row[c] = f16_to_f32(lut[codes[c]]);
    if (!m.has_sparse()) continue;
    for (int32_t i = m.row_ptr[r]; i < m.row_ptr[r + 1]; ++i) row[m.col[i]] += f16_to_f32(m.val[i]);
  }
}

double lut_bits_per_weight(int bits, int64_t rows, int64_t cols, int64_t nnz) {
  const double weights = static_cast<double>(rows) * static_cast<double>(cols);
  const double lut_bits = 16.0 * static_cast<double>(rows) * static_cast<double>(int64_t{1} << bits);
  double sparse_bits = 0;
  if (nnz > 0) {
    const double col_bits = cols <= 65536 ? 16.0 : 32.0;
    sparse_bits = static_cast<double>(nnz) * (16.0 + col_bits) + 32.0 * static_cast<double>(rows + 1);
  }
  return bits + (lut_bits + sparse_bits) / weights;
}

}  // namespace fsq
