// Entry points of the fast uniform kernels: argument checks, ISA dispatch, packing x into
// the panel the SIMD GEMVs read, and the OpenMP split over output rows.
#include <algorithm>
#include <cstdint>

#include "runtime/cpu/gemv_batches.h"
#include "runtime/cpu/uniform_isa.h"
#include "runtime/cpu/uniform_kernels.h"

namespace fsq::cpu {
namespace {

GemvRowsFn gemv_rows_for(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Avx512: return gemv_rows_avx512;
    case CpuIsa::Avx2: return gemv_rows_avx2;
    case CpuIsa::Scalar: break;
  }
  return gemv_rows_scalar;
}

DequantizeRowsFn dequantize_rows_for(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Avx512: return dequantize_rows_avx512;
    case CpuIsa::Avx2: return dequantize_rows_avx2;
    case CpuIsa::Scalar: break;
  }
  return dequantize_rows_scalar;
}

// The panel layout the ISA's GEMV reads (uniform_isa.h); lanes 0: the scalar GEMV, which
// reads x as given.
PanelLayout panel_layout(CpuIsa isa, int bits) {
  switch (isa) {
    case CpuIsa::Avx512: return {kAvx512Lanes, bits == 4};
    case CpuIsa::Avx2: return {kAvx2Lanes, bits == 4};
    case CpuIsa::Scalar: break;
  }
  return {};
}

int64_t panel_floats(const UniformWeightsView& w, int64_t m, int64_t lanes) {
  return m * (w.cols / w.group_cols) * ((w.group_cols + lanes - 1) / lanes) * lanes;
}

// Copies x [m, cols] (row stride x_stride) into the panel layout.
void pack_panel(const UniformWeightsView& w, const float* x, int64_t m, int64_t x_stride, PanelLayout layout,
                float* panel) {
  const int64_t lanes = layout.lanes, group_vectors = (w.group_cols + lanes - 1) / lanes;
  const int64_t step_vectors = layout.nibble_planes ? w.group_cols / (2 * lanes) * 2 : 0;
  const auto vector_of = [&](int64_t v, int64_t i) { return panel + (v * m + i) * lanes; };
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t g = 0; g < w.cols / w.group_cols; ++g) {
      const float* src = x + i * x_stride + g * w.group_cols;
      const int64_t v0 = g * group_vectors;
      for (int64_t v = 0; v < step_vectors; v += 2) {  // even columns, then odd columns
        float* even = vector_of(v0 + v, i);
        float* odd = vector_of(v0 + v + 1, i);
        for (int64_t j = 0; j < lanes; ++j) {
          even[j] = src[v * lanes + 2 * j];
          odd[j] = src[v * lanes + 2 * j + 1];
        }
      }
      for (int64_t v = step_vectors; v < group_vectors; ++v) {  // in order, zero past the group
        float* dst = vector_of(v0 + v, i);
        for (int64_t j = 0; j < lanes; ++j) dst[j] = v * lanes + j < w.group_cols ? src[v * lanes + j] : 0.0f;
      }
    }
  }
}

// Calls fn(row_begin, row_end) over ranges of rows, on all OpenMP threads when worthwhile.
template <typename Fn>
void for_each_row_block(int64_t rows, int64_t work, const Fn& fn) {
  for_each_thread_rows(rows, work >= kGemvParallelMinWork, fn);
}

}  // namespace

KernelStatus uniform_gemv(const UniformWeightsView& w, const float* x, int64_t m, int64_t x_stride, float* y,
                          int64_t y_stride, CpuIsa isa) {
  if (check_matmul_call(w, x, m, x_stride, y, y_stride) != KernelStatus::Ok) return KernelStatus::InvalidArgument;
  if (!cpu_supports(isa)) return KernelStatus::IsaUnavailable;
  const GemvRowsFn rows_fn = gemv_rows_for(isa);
  const PanelLayout layout = panel_layout(isa, w.bits);
  const int64_t panel_size = layout.lanes > 0 ? panel_floats(w, std::min(m, kMaxGemvRows), layout.lanes) : 0;
  for_each_gemv_batch<GemvBatch>(
      w, x, m, x_stride, y, y_stride, layout.lanes, panel_size,
      [&](const float* bx, int64_t bm, float* panel) { pack_panel(w, bx, bm, x_stride, layout, panel); },
      [&](const GemvBatch& batch) {
        for_each_row_block(w.rows, w.rows * w.cols * batch.m,
                           [&](int64_t r0, int64_t r1) { rows_fn(batch, r0, r1); });
      });
  return KernelStatus::Ok;
}

KernelStatus uniform_dequantize_rows(const UniformWeightsView& w, int64_t row0, int64_t nrows, float* out,
                                     CpuIsa isa) {
  if (check_uniform_view(w) != KernelStatus::Ok) return KernelStatus::InvalidArgument;
  if (row0 < 0 || nrows < 0 || row0 + nrows > w.rows || (nrows > 0 && out == nullptr))
    return KernelStatus::InvalidArgument;
  if (!cpu_supports(isa)) return KernelStatus::IsaUnavailable;
  const DequantizeRowsFn fn = dequantize_rows_for(isa);
  for_each_row_block(nrows, nrows * w.cols,
                     [&](int64_t r0, int64_t r1) { fn(w, row0 + r0, r1 - r0, out + r0 * w.cols); });
  return KernelStatus::Ok;
}

}  // namespace fsq::cpu
