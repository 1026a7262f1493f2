// Portable fallback of the uniform kernels (any x86-64 or other CPU): a chunk of codes is
// dequantized exactly like the reference into a small buffer, then used by every row of x.
#include <algorithm>

#include "common/half.h"
#include "runtime/cpu/packed_code.h"
#include "runtime/cpu/uniform_isa.h"

namespace fsq::cpu {
namespace {

constexpr int64_t kChunkCodes = 64;  // weights dequantized at once, shared by all rows of x

}  // namespace

void gemv_rows_scalar(const GemvBatch& b, int64_t row0, int64_t row1) {
  const UniformWeightsView& w = *b.w;
  const int64_t groups = w.cols / w.group_cols;
  float weights[kChunkCodes];
  for (int64_t n = row0; n < row1; ++n) {
    const uint32_t* row = w.words + n * w.words_per_row;
    float acc[kMaxGemvRows] = {};
    for (int64_t g = 0; g < groups; ++g) {
      const float scale = f16_to_f32(w.scales[n * groups + g]);
      const int zero = zero_point(w, n, g);
      const int64_t group_end = (g + 1) * w.group_cols;
      for (int64_t k0 = g * w.group_cols; k0 < group_end; k0 += kChunkCodes) {
        const int64_t len = std::min(kChunkCodes, group_end - k0);
        for (int64_t j = 0; j < len; ++j)
          weights[j] = static_cast<float>(static_cast<int>(packed_code(row, k0 + j, w.bits)) - zero) * scale;
        for (int64_t i = 0; i < b.m; ++i) {
          const float* xi = b.x + i * b.x_stride + k0;
          for (int64_t j = 0; j < len; ++j) acc[i] += xi[j] * weights[j];
        }
      }
    }
    for (int64_t i = 0; i < b.m; ++i) b.y[i * b.y_stride + n] = acc[i];
  }
}

void dequantize_rows_scalar(const UniformWeightsView& w, int64_t row0, int64_t nrows, float* out) {
  const int64_t groups = w.cols / w.group_cols;
  for (int64_t r = row0; r < row0 + nrows; ++r) {
    const uint32_t* row = w.words + r * w.words_per_row;
    float* dst = out + (r - row0) * w.cols;
    for (int64_t g = 0; g < groups; ++g) {
      const float scale = f16_to_f32(w.scales[r * groups + g]);
      const int zero = zero_point(w, r, g);
      for (int64_t k = g * w.group_cols; k < (g + 1) * w.group_cols; ++k)
        dst[k] = static_cast<float>(static_cast<int>(packed_code(row, k, w.bits)) - zero) * scale;
    }
  }
}

}  // namespace fsq::cpu
