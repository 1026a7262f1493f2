// Argument checks of the LUT kernels and the scalar reference matmul (the spec).
#include <cstdint>
#include <limits>
#include <vector>

#include "common/half.h"
#include "runtime/cpu/lut_kernels.h"
#include "runtime/cpu/packed_code.h"

namespace fsq::cpu {

KernelStatus check_lut_view(const LutWeightsView& w) {
  if ((w.bits != 3 && w.bits != 4) || w.words == nullptr || w.lut == nullptr || w.rows <= 0 || w.cols <= 0)
    return KernelStatus::InvalidArgument;
  if (w.words_per_row != (w.cols * w.bits + 31) / 32) return KernelStatus::InvalidArgument;
  if (w.row_ptr == nullptr)
    return w.col == nullptr && w.val == nullptr && w.nnz == 0 ? KernelStatus::Ok : KernelStatus::InvalidArgument;
  if (w.nnz < 0 || w.nnz > std::numeric_limits<int32_t>::max()) return KernelStatus::InvalidArgument;
  if (w.col_type != LutColType::U16 && w.col_type != LutColType::I32) return KernelStatus::InvalidArgument;
  if (w.col_type == LutColType::U16 && w.cols > 65536) return KernelStatus::InvalidArgument;
  if (w.nnz > 0 && (w.col == nullptr || w.val == nullptr)) return KernelStatus::InvalidArgument;
  if (w.row_ptr[0] != 0 || w.row_ptr[w.rows] != w.nnz) return KernelStatus::InvalidArgument;
  return KernelStatus::Ok;
}

namespace {

int64_t sparse_col(const LutWeightsView& w, int64_t i) {
  return w.col_type == LutColType::U16 ? static_cast<const uint16_t*>(w.col)[i] : static_cast<const int32_t*>(w.col)[i];
}

}  // namespace

KernelStatus check_lut_sparse(const LutWeightsView& w) {
  if (check_lut_view(w) != KernelStatus::Ok) return KernelStatus::InvalidArgument;
  if (w.row_ptr == nullptr) return KernelStatus::Ok;
  for (int64_t r = 0; r < w.rows; ++r) {
    const int64_t begin = w.row_ptr[r], end = w.row_ptr[r + 1];
    // row_ptr[0] == 0 and row_ptr[rows] == nnz, so non-decreasing keeps every pointer in range.
    if (end < begin) return KernelStatus::InvalidArgument;
    int64_t previous = -1;
    for (int64_t i = begin; i < end; ++i) {
      const int64_t c = sparse_col(w, i);
      if (c <= previous || c >= w.cols) return KernelStatus::InvalidArgument;
      previous = c;
    }
  }
  return KernelStatus::Ok;
}

KernelStatus lut_matmul_reference(const LutWeightsView& w, const float* x, int64_t m, int64_t x_stride, float* y,
                                  int64_t y_stride) {
  if (check_lut_sparse(w) != KernelStatus::Ok) return KernelStatus::InvalidArgument;
  if (m < 0 || (m > 0 && (x == nullptr || y == nullptr)) || x_stride < w.cols || y_stride < w.rows)
    return KernelStatus::InvalidArgument;
  const int64_t levels = int64_t{1} << w.bits;
  std::vector<float> row(static_cast<size_t>(w.cols));
  for (int64_t n = 0; n < w.rows; ++n) {
    // w'[n, *] exactly as dequantize_lut: the centroid, plus the sparse value in float32.
    const uint32_t* codes = w.words + n * w.words_per_row;
    for (int64_t k = 0; k < w.cols; ++k)
      row[static_cast<size_t>(k)] = f16_to_f32(w.lut[n * levels + packed_code(codes, k, w.bits)]);
    if (w.row_ptr != nullptr)
      for (int64_t i = w.row_ptr[n]; i < w.row_ptr[n + 1]; ++i)
        row[static_cast<size_t>(sparse_col(w, i))] += f16_to_f32(w.val[i]);
    for (int64_t i = 0; i < m; ++i) {
      double s = 0.0;
      for (int64_t k = 0; k < w.cols; ++k)
        s += static_cast<double>(x[i * x_stride + k]) * static_cast<double>(row[static_cast<size_t>(k)]);
      y[i * y_stride + n] = static_cast<float>(s);
    }
  }
  return KernelStatus::Ok;
}

}  // namespace fsq::cpu
