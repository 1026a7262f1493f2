// uniform_gemv_q8: the activation quantization (baseline code, shared by every ISA so all
// of them see the same codes), the panel the SIMD kernels read (uniform_q8_isa.h), the
// scalar spec, and the OpenMP split over output rows.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "common/half.h"
#include "runtime/cpu/gemv_batches.h"
#include "runtime/cpu/int8_kernels.h"  // cpu_has_avx512_vnni
#include "runtime/cpu/packed_code.h"
#include "runtime/cpu/q8_panel.h"
#include "runtime/cpu/uniform_q8_isa.h"
#include "runtime/cpu/uniform_q8_kernels.h"

namespace fsq::cpu {
namespace {

// Groups must be whole activation blocks, and a kernel chunk must lie in one group or
// cover whole groups.
bool q8_layout_supported(const UniformWeightsView& w) {
  if (w.bits != 3 && w.bits != 4 && w.bits != 8) return false;
  const int64_t groups = w.cols / w.group_cols, chunk = q8_chunk_cols(w.bits);
  if (groups > kQ8MaxRowGroups) return false;
  if (groups == 1) return w.cols % (chunk / kQ8ChunkLanes) == 0;
  return w.group_cols % kQ8BlockCols == 0 && (w.group_cols % chunk == 0 || chunk % w.group_cols == 0);
}

Q8RowsFn q8_rows_for(const UniformWeightsView& w, CpuIsa isa) {
  if (w.bits == 3 && isa == CpuIsa::Avx512 && cpu_has_avx512_vnni() && cpu_has_avx512_vbmi()) return q8_rows_avx512vbmi;
  if (w.bits != 3 && isa == CpuIsa::Avx512 && cpu_has_avx512_vnni()) return q8_rows_avx512vnni;
  if ((isa == CpuIsa::Avx2 || isa == CpuIsa::Avx512) && cpu_supports(isa)) return q8_rows_avx2;  // 3, 4 and 8 bits
  return nullptr;
}

}  // namespace

void quantize_q8_row(const float* x, int64_t cols, int8_t* q, float* d) {
  // Written so that the compiler vectorizes it (it runs once per linear and decode step):
  // no early exits, rounding by the 1.5 * 2^23 trick (round-to-nearest-even for |v| < 2^22,
  // as nearbyint in the default rounding mode, without a libm call).
  constexpr float kRound = 12582912.0f;
  for (int64_t b = 0; b < q8_block_count(cols); ++b) {
    const int64_t k0 = b * kQ8BlockCols, n = std::min(cols, k0 + kQ8BlockCols) - k0;
    const float* xb = x + k0;
    float top = 0.0f, poison = 0.0f;  // poison: NaN when the block holds a NaN or an infinity
    for (int64_t k = 0; k < n; ++k) {
      top = std::max(top, std::fabs(xb[k]));
      poison += xb[k] * 0.0f;
    }
    const float scale = poison == 0.0f ? top / 127.0f : NAN;
    d[b] = scale;
    for (int64_t k = 0; k < n; ++k) {
      // Codes 0 for a zero or NaN scale. |x / scale| <= 127 up to rounding; the clamp
      // guards the last ulp.
      const float v = ((scale > 0.0f ? xb[k] / scale : 0.0f) + kRound) - kRound;
      q[k0 + k] = static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
    }
  }
}

void quantize_q8_row_fast(const float* x, int64_t cols, int8_t* q, float* d) {
  static const bool vnni = cpu_has_avx512_vnni();
  if (vnni)
    quantize_q8_row_avx512(x, cols, q, d);
  else
    quantize_q8_row(x, cols, q, d);
}

Q8Panel::Q8Panel(const UniformWeightsView& w, int64_t m, Q8RowQuantizer quantize)
    : w_(w), quantize_(quantize), q_(static_cast<size_t>(w.cols)), d_(static_cast<size_t>(q8_block_count(w.cols))) {
  const int64_t chunks = (w.cols + q8_chunk_cols(w.bits) - 1) / q8_chunk_cols(w.bits);
  codes_stride = chunks * (w.bits == 4 ? 2 : 1) * kQ8ChunkBytes;
  lane_scales_stride = chunks * kQ8ChunkLanes;
  group_sums_stride = w.cols / w.group_cols + kQ8ChunkLanes;
  codes.assign(static_cast<size_t>(m * codes_stride), 0);
  lane_scales.assign(static_cast<size_t>(m * lane_scales_stride), 0.0f);
  group_sums.assign(static_cast<size_t>(m * group_sums_stride), 0.0f);
}

void Q8Panel::fill(const float* x, int64_t m, int64_t x_stride) {
  for (int64_t i = 0; i < m; ++i) fill_row(i, x + i * x_stride);
}

void Q8Panel::fill_row(int64_t i, const float* x) {
  const UniformWeightsView& w = w_;
  std::vector<int8_t>& q = q_;
  std::vector<float>& d = d_;
  const int64_t cols = w.cols, chunk = q8_chunk_cols(w.bits), lane_cols = chunk / kQ8ChunkLanes;
  quantize_(x, cols, q.data(), d.data());
  int8_t* row_codes = codes.data() + i * codes_stride;
  if (w.bits == 4) {
    for (int64_t k0 = 0; k0 < cols; k0 += chunk) {  // chunk c: even columns at 128 c, odd at 128 c + 64
      int8_t* even = row_codes + k0 * 2 * kQ8ChunkBytes / chunk;
      int8_t* odd = even + kQ8ChunkBytes;
      const int64_t pairs = std::min(chunk, cols - k0) / 2;  // cols is even here (a multiple of 8)
      for (int64_t j = 0; j < pairs; ++j) {
        even[j] = q[static_cast<size_t>(k0 + 2 * j)];
        odd[j] = q[static_cast<size_t>(k0 + 2 * j + 1)];
      }
    }
  } else {
    std::copy(q.begin(), q.begin() + cols, row_codes);
  }
  float* lanes = lane_scales.data() + i * lane_scales_stride;
  for (int64_t l = 0; l * lane_cols < cols; ++l) lanes[l] = d[static_cast<size_t>(l * lane_cols / kQ8BlockCols)];
  float* sums = group_sums.data() + i * group_sums_stride;
  for (int64_t g = 0; g < cols / w.group_cols; ++g) {
    double sum = 0.0;
    for (int64_t b = g * w.group_cols / kQ8BlockCols; b * kQ8BlockCols < (g + 1) * w.group_cols; ++b) {
      int64_t codes_sum = 0;
      for (int64_t k = b * kQ8BlockCols; k < std::min(cols, (b + 1) * kQ8BlockCols); ++k)
        codes_sum += q[static_cast<size_t>(k)];
      sum += static_cast<double>(d[static_cast<size_t>(b)]) * static_cast<double>(codes_sum);
    }
    sums[g] = static_cast<float>(sum);
  }
}

bool uniform_q8_supported(const UniformWeightsView& w, CpuIsa isa) {
  return check_uniform_view(w) == KernelStatus::Ok && q8_layout_supported(w) && q8_rows_for(w, isa) != nullptr;
}

KernelStatus uniform_gemv_q8_reference(const UniformWeightsView& w, const float* x, int64_t m, int64_t x_stride,
                                       float* y, int64_t y_stride) {
  return uniform_gemv_reference_with(w, x, m, x_stride, y, y_stride, quantize_q8_row);
}

KernelStatus uniform_gemv_reference_with(const UniformWeightsView& w, const float* x, int64_t m, int64_t x_stride,
                                         float* y, int64_t y_stride, Q8RowQuantizer quantize) {
  if (check_matmul_call(w, x, m, x_stride, y, y_stride) != KernelStatus::Ok) return KernelStatus::InvalidArgument;
  const int64_t groups = w.cols / w.group_cols;
  std::vector<int8_t> q(static_cast<size_t>(w.cols));
  std::vector<float> d(static_cast<size_t>(q8_block_count(w.cols)));
  for (int64_t i = 0; i < m; ++i) {
    quantize(x + i * x_stride, w.cols, q.data(), d.data());
    for (int64_t n = 0; n < w.rows; ++n) {
      const uint32_t* row = w.words + n * w.words_per_row;
      double sum = 0.0;
      for (int64_t g = 0; g < groups; ++g) {
        const int zero = zero_point(w, n, g);
        double group_sum = 0.0;
        for (int64_t k0 = g * w.group_cols; k0 < (g + 1) * w.group_cols; k0 += kQ8BlockCols) {
          int64_t dot = 0;
          for (int64_t k = k0; k < std::min((g + 1) * w.group_cols, k0 + kQ8BlockCols); ++k)
            dot += (static_cast<int64_t>(packed_code(row, k, w.bits)) - zero) * q[static_cast<size_t>(k)];
          group_sum += static_cast<double>(d[static_cast<size_t>(k0 / kQ8BlockCols)]) * static_cast<double>(dot);
        }
        sum += static_cast<double>(f16_to_f32(w.scales[n * groups + g])) * group_sum;
      }
      y[i * y_stride + n] = static_cast<float>(sum);
    }
  }
  return KernelStatus::Ok;
}

KernelStatus uniform_gemv_q8(const UniformWeightsView& w, const float* x, int64_t m, int64_t x_stride, float* y,
                             int64_t y_stride, CpuIsa isa) {
  const Q8GemvOutput output{&w, y, y_stride};
  return uniform_gemv_q8_together(&output, 1, x, m, x_stride, isa);
}

KernelStatus uniform_gemv_q8_together(const Q8GemvOutput* outputs, int count, const float* x, int64_t m,
                                      int64_t x_stride, CpuIsa isa) {
  return q8_gemv_together_with(outputs, count, x, m, x_stride, isa, quantize_q8_row_fast);
}

KernelStatus q8_gemv_together_with(const Q8GemvOutput* outputs, int count, const float* x, int64_t m,
                                   int64_t x_stride, CpuIsa isa, Q8RowQuantizer quantize) {
  if (outputs == nullptr || count <= 0) return KernelStatus::InvalidArgument;
  const UniformWeightsView& first = *outputs[0].w;
  const auto round_up_rows = [](int64_t rows) { return (rows + kGemvRowAlign - 1) / kGemvRowAlign * kGemvRowAlign; };
  int64_t total_rows = 0, stacked_rows = 0;
  for (int j = 0; j < count; ++j) {
    const Q8GemvOutput& o = outputs[j];
    if (o.w == nullptr || check_matmul_call(*o.w, x, m, x_stride, o.y, o.y_stride) != KernelStatus::Ok ||
        !q8_layout_supported(*o.w) || o.w->cols != first.cols || o.w->bits != first.bits ||
        o.w->group_cols != first.group_cols)
      return KernelStatus::InvalidArgument;
    if (q8_rows_for(*o.w, isa) == nullptr) return KernelStatus::IsaUnavailable;
    total_rows += o.w->rows;
    stacked_rows += round_up_rows(o.w->rows);
  }
  Q8Panel panel(first, std::min(m, kMaxGemvRows), quantize);
  std::vector<Q8Batch> batches(static_cast<size_t>(count));
  for (int64_t i0 = 0; i0 < m; i0 += kMaxGemvRows) {
    const int64_t rows_of_x = std::min(kMaxGemvRows, m - i0);
    panel.fill(x + i0 * x_stride, rows_of_x, x_stride);
    for (int j = 0; j < count; ++j) {
      Q8Batch& batch = batches[static_cast<size_t>(j)];
      batch.w = outputs[j].w;
      batch.m = rows_of_x;
      batch.q8 = panel.activations();
      batch.y = outputs[j].y + i0 * outputs[j].y_stride;
      batch.y_stride = outputs[j].y_stride;
    }
    // Rows [row0, row1) of the matrices stacked in order, each part to its own matrix. Each
    // matrix starts on a multiple of kGemvRowAlign (padding rows map to none), so its row
    // blocks fall as in uniform_gemv_q8: the same sums in the same order.
    for_each_thread_rows(stacked_rows, total_rows * first.cols * rows_of_x >= kGemvParallelMinWork,
                         [&](int64_t row0, int64_t row1) {
                           int64_t base = 0;
                           for (int j = 0; j < count && base < row1; ++j) {
                             const Q8Batch& batch = batches[static_cast<size_t>(j)];
                             const int64_t begin = std::max(row0, base), end = std::min(row1, base + batch.w->rows);
                             if (begin < end) q8_rows_for(*batch.w, isa)(batch, begin - base, end - base);
                             base += round_up_rows(batch.w->rows);
                           }
                         });
  }
  return KernelStatus::Ok;
}

}  // namespace fsq::cpu
