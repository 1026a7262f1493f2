// Entry points of the fast LUT kernels: argument checks, ISA dispatch, packing x into the
// panel the SIMD GEMVs read, and the OpenMP split over output rows (balanced by codes and
// nonzeros).
#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "runtime/cpu/gemv_batches.h"
#include "runtime/cpu/lut_isa.h"
#include "runtime/cpu/lut_kernels.h"

namespace fsq::cpu {
namespace {

// What one nonzero of the CSR part costs, in codes of the dense part: a nonzero is a
// column load, a value conversion, a gather from x and an FMA per activation row, where a
// code is an eighth or a sixteenth of a vector instruction. Used only to balance threads.
constexpr int64_t kNonzeroCost = 16;

bool vbmi_allowed = true;

LutGemvRowsFn lut_gemv_rows_for(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Avx512: return lut_vbmi_in_use() ? lut_gemv_rows_avx512vbmi : lut_gemv_rows_avx512;
    case CpuIsa::Avx2: return lut_gemv_rows_avx2;
    case CpuIsa::Scalar: break;
  }
  return lut_gemv_rows_scalar;
}

LutDequantizeRowsFn lut_dequantize_rows_for(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Avx512: return lut_dequantize_rows_avx512;
    case CpuIsa::Avx2: return lut_dequantize_rows_avx2;
    case CpuIsa::Scalar: break;
  }
  return lut_dequantize_rows_scalar;
}

// Panel lanes the ISA's GEMV reads (lut_isa.h); 0: the scalar GEMV reads x as given.
int64_t panel_lanes(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Avx512: return kLutAvx512Lanes;
    case CpuIsa::Avx2: return kLutAvx2Lanes;
    case CpuIsa::Scalar: break;
  }
  return 0;
}

void pack_lut_panel(const LutWeightsView& w, const float* x, int64_t m, int64_t x_stride, int64_t lanes, float* panel) {
  const int64_t vectors = lut_panel_vectors(w.cols, lanes);
  for (int64_t v = 0; v < vectors; ++v)
    for (int64_t i = 0; i < m; ++i) {
      float* dst = panel + (v * m + i) * lanes;
      for (int64_t j = 0; j < lanes; ++j) {
        const int64_t k = lut_panel_column(v, j, lanes, w.bits, w.cols);
        dst[j] = k < w.cols ? x[i * x_stride + k] : 0.0f;
      }
    }
}

// The cost of rows [0, r): their codes and their nonzeros.
int64_t cost_before(const LutWeightsView& w, int64_t r) {
  return r * w.cols + (w.row_ptr != nullptr ? kNonzeroCost * w.row_ptr[r] : 0);
}

// The first row of part t of `parts` of equal cost: the smallest r with cost_before(r) >=
// total * t / parts. Depends only on (w, t, parts), never on timing.
int64_t part_begin(const LutWeightsView& w, int64_t t, int64_t parts) {
  if (t >= parts) return w.rows;
  const int64_t total = cost_before(w, w.rows);
  const auto target = static_cast<int64_t>(static_cast<__int128>(total) * t / parts);
  int64_t lo = 0, hi = w.rows;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (cost_before(w, mid) >= target)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

// Calls fn(row_begin, row_end) once per OpenMP thread over contiguous parts of equal cost.
template <typename Fn>
void for_each_part(const LutWeightsView& w, int64_t work, const Fn& fn) {
#pragma omp parallel if (work >= kGemvParallelMinWork)
  {
    const int64_t parts = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t begin = part_begin(w, t, parts), end = part_begin(w, t + 1, parts);
    if (begin < end) fn(begin, end);
  }
}

}  // namespace

bool set_lut_vbmi_allowed(bool allowed) {
  const bool previous = vbmi_allowed;
  vbmi_allowed = allowed;
  return previous;
}

bool lut_vbmi_in_use() {
  static const bool supported = cpu_supports(CpuIsa::Avx512) && __builtin_cpu_supports("avx512vbmi");
  return vbmi_allowed && supported;
}

KernelStatus lut_gemv(const LutWeightsView& w, const float* x, int64_t m, int64_t x_stride, float* y,
                      int64_t y_stride, CpuIsa isa) {
  if (check_lut_view(w) != KernelStatus::Ok) return KernelStatus::InvalidArgument;
  if (m < 0 || (m > 0 && (x == nullptr || y == nullptr)) || x_stride < w.cols || y_stride < w.rows)
    return KernelStatus::InvalidArgument;
  if (!cpu_supports(isa)) return KernelStatus::IsaUnavailable;
  const LutGemvRowsFn rows_fn = lut_gemv_rows_for(isa);
  const int64_t lanes = panel_lanes(isa);
  const int64_t panel_size = lanes > 0 ? std::min(m, kMaxGemvRows) * lut_panel_vectors(w.cols, lanes) * lanes : 0;
  for_each_gemv_batch<LutGemvBatch>(
      w, x, m, x_stride, y, y_stride, lanes, panel_size,
      [&](const float* bx, int64_t bm, float* panel) { pack_lut_panel(w, bx, bm, x_stride, lanes, panel); },
      [&](const LutGemvBatch& batch) {
        for_each_part(w, cost_before(w, w.rows) * batch.m, [&](int64_t r0, int64_t r1) { rows_fn(batch, r0, r1); });
      });
  return KernelStatus::Ok;
}

KernelStatus lut_dequantize_rows(const LutWeightsView& w, int64_t row0, int64_t nrows, float* out, CpuIsa isa) {
  if (check_lut_view(w) != KernelStatus::Ok) return KernelStatus::InvalidArgument;
  if (row0 < 0 || nrows < 0 || row0 > w.rows - nrows || (nrows > 0 && out == nullptr))
    return KernelStatus::InvalidArgument;
  if (!cpu_supports(isa)) return KernelStatus::IsaUnavailable;
  const LutDequantizeRowsFn fn = lut_dequantize_rows_for(isa);
  constexpr int64_t kRowsPerTask = 16;
  const int64_t tasks = (nrows + kRowsPerTask - 1) / kRowsPerTask;
#pragma omp parallel for schedule(static) if (nrows * w.cols >= kGemvParallelMinWork)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t r0 = t * kRowsPerTask, r1 = std::min(nrows, r0 + kRowsPerTask);
    fn(w, row0 + r0, r1 - r0, out + r0 * w.cols);
  }
  return KernelStatus::Ok;
}

}  // namespace fsq::cpu
