// SqueezeLLM's dense-and-sparse split: which weights of a matrix [rows, cols] leave the
// k-means (dense) part and are kept in the sparse (CSR) part. Two kinds, their union kept:
//
//   outliers:  per row, the outliers_per_side(cols, outlier_pct) smallest and as many
//              largest values of the row (signed values, ordered by (value, column), so
//              ties are broken by column and the count is exact): the values outside the
//              row's [p, 100 - p] percentile range with p = outlier_pct / 2;
//   sensitive: the sensitive_count(rows, cols, sensitive_pct) largest Fisher values of the
//              whole matrix, ordered by (Fisher desc, row-major index asc) -- ties at the
//              threshold go to the earliest positions in row-major order.
//
// A position in both sets is kept once, so nnz = rows * 2 * outliers_per_side +
// sensitive_count - |outliers and sensitive|.
#pragma once

#include <cstdint>
#include <vector>

namespace fsq::squeezellm {

// round(cols * outlier_pct / 200) (halves up), at most cols / 2: values kept at each end of a row.
int64_t outliers_per_side(int64_t cols, double outlier_pct);

// round(rows * cols * sensitive_pct / 100) (halves up), at most rows * cols.
int64_t sensitive_count(int64_t rows, int64_t cols, double sensitive_pct);

// A total order on finite floats as unsigned integers (-0 sorts just below +0).
inline uint32_t orderable_bits(uint32_t bits) { return bits & 0x80000000u ? ~bits : bits | 0x80000000u; }

// The columns of a row's outliers (ascending): the `per_side` first and last of the row
// in (value, column) order.
std::vector<int32_t> row_outlier_columns(const float* row, int64_t cols, int64_t per_side);

// The sensitive positions, per row: columns of row r are col[row_ptr[r] .. row_ptr[r + 1]),
// ascending. `fisher` is non-negative and finite; count <= rows * cols. O(rows * cols):
// a radix select on the Fisher values' bits, no sort.
struct SparsePattern {
  std::vector<int64_t> row_ptr;  // [rows + 1]
  std::vector<int32_t> col;
};
SparsePattern select_sensitive(const float* fisher, int64_t rows, int64_t cols, int64_t count);

}  // namespace fsq::squeezellm
