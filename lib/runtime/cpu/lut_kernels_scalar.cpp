// Portable fallback of the LUT kernels: per row the table is converted to float once, a
// chunk of codes is looked up into a small buffer, then used by every row of x; the row's
// nonzeros are added after its dense sum.
#include <algorithm>

#include "common/half.h"
#include "runtime/cpu/lut_isa.h"
#include "runtime/cpu/packed_code.h"

namespace fsq::cpu {
namespace {

constexpr int64_t kLutChunkCodes = 64;  // weights looked up at once, shared by all rows of x

template <typename Col>
void add_sparse_row(const LutGemvBatch& b, const Col* col, int64_t n, float* acc) {
  const LutWeightsView& w = *b.w;
  float sparse[kMaxGemvRows] = {};
  for (int64_t e = w.row_ptr[n]; e < w.row_ptr[n + 1]; ++e) {
    const float v = f16_to_f32(w.val[e]);
    const int64_t k = col[e];
    for (int64_t i = 0; i < b.m; ++i) sparse[i] += b.x[i * b.x_stride + k] * v;
  }
  for (int64_t i = 0; i < b.m; ++i) acc[i] += sparse[i];
}

}  // namespace

void lut_gemv_rows_scalar(const LutGemvBatch& b, int64_t row0, int64_t row1) {
  const LutWeightsView& w = *b.w;
  const int64_t levels = int64_t{1} << w.bits;
  float table[16], weights[kLutChunkCodes];
  for (int64_t n = row0; n < row1; ++n) {
    const uint32_t* row = w.words + n * w.words_per_row;
    for (int64_t q = 0; q < levels; ++q) table[q] = f16_to_f32(w.lut[n * levels + q]);
    float acc[kMaxGemvRows] = {};
    for (int64_t k0 = 0; k0 < w.cols; k0 += kLutChunkCodes) {
      const int64_t len = std::min(kLutChunkCodes, w.cols - k0);
      for (int64_t j = 0; j < len; ++j) weights[j] = table[packed_code(row, k0 + j, w.bits)];
      for (int64_t i = 0; i < b.m; ++i) {
        const float* xi = b.x + i * b.x_stride + k0;
        for (int64_t j = 0; j < len; ++j) acc[i] += xi[j] * weights[j];
      }
    }
    if (w.row_ptr != nullptr) {
      if (w.col_type == LutColType::U16)
        add_sparse_row(b, static_cast<const uint16_t*>(w.col), n, acc);
      else
        add_sparse_row(b, static_cast<const int32_t*>(w.col), n, acc);
    }
    for (int64_t i = 0; i < b.m; ++i) b.y[i * b.y_stride + n] = acc[i];
  }
}

void lut_dequantize_rows_scalar(const LutWeightsView& w, int64_t row0, int64_t nrows, float* out) {
  const int64_t levels = int64_t{1} << w.bits;
  float table[16];
  for (int64_t r = row0; r < row0 + nrows; ++r) {
    const uint32_t* row = w.words + r * w.words_per_row;
    for (int64_t q = 0; q < levels; ++q) table[q] = f16_to_f32(w.lut[r * levels + q]);
    float* dst = out + (r - row0) * w.cols;
    for (int64_t k = 0; k < w.cols; ++k) dst[k] = table[packed_code(row, k, w.bits)];
    if (w.row_ptr == nullptr) continue;
    for (int64_t e = w.row_ptr[r]; e < w.row_ptr[r + 1]; ++e) {
      const int64_t k = w.col_type == LutColType::U16 ? static_cast<const uint16_t*>(w.col)[e]
                                                      : static_cast<const int32_t*>(w.col)[e];
      dst[k] += f16_to_f32(w.val[e]);
    }
  }
}

}  // namespace fsq::cpu
