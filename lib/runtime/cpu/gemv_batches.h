// The batch loop shared by the GEMV dispatchers (uniform_gemv.cpp, lut_gemv.cpp,
// dense_gemv.cpp): x is taken kMaxGemvRows rows at a time and packed into one panel buffer
// reused by every batch.
// Baseline code only: the SIMD kernel files must not include it (uniform_isa.h).
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/cpu/kernel_status.h"  // kMaxGemvRows

namespace fsq::cpu {

// For each batch of at most kMaxGemvRows rows of x (and of y): when lanes > 0, calls
// pack(batch.x, batch.m, panel) and sets batch.panel; then calls run(batch). panel_size:
// the floats of the largest batch's panel.
template <typename Batch, typename Weights, typename Pack, typename Run>
void for_each_gemv_batch(const Weights& w, const float* x, int64_t m, int64_t x_stride, float* y, int64_t y_stride,
                         int64_t lanes, int64_t panel_size, const Pack& pack, const Run& run) {
  // Aligned to a cache line: the SIMD GEMVs load every panel vector once per weight row.
  constexpr int64_t kAlignFloats = 16;
  std::vector<float> panel_buffer(static_cast<size_t>(panel_size + kAlignFloats));
  const auto misalignment = reinterpret_cast<uintptr_t>(panel_buffer.data()) / sizeof(float) % kAlignFloats;
  float* panel = panel_buffer.data() + (kAlignFloats - misalignment) % kAlignFloats;
  for (int64_t i0 = 0; i0 < m; i0 += kMaxGemvRows) {
    Batch batch;
    batch.w = &w;
    batch.m = std::min(kMaxGemvRows, m - i0);
    batch.x = x + i0 * x_stride;
    batch.x_stride = x_stride;
    batch.y = y + i0 * y_stride;
    batch.y_stride = y_stride;
    if (lanes > 0) {
      pack(batch.x, batch.m, panel);
      batch.panel = panel;
    }
    run(batch);
  }
}

// Below this much work per call (weights times activation rows), waking threads costs more
// than it saves: every GEMV runs single-threaded under it.
inline constexpr int64_t kGemvParallelMinWork = int64_t{1} << 16;

// The row ranges of for_each_thread_rows start on multiples of this.
inline constexpr int64_t kGemvRowAlign = 16;

// Calls fn(row_begin, row_end) over [0, rows): one contiguous range per OpenMP thread (a
// multiple of kGemvRowAlign rows) when parallel, else one call for all. Ranges, not small
// tasks: a SIMD kernel sets up per call (masks, lane tables, prefetch distances), which at
// 16 rows a task cost SmolLM2's 576-column W4 GEMV ~10 % of its time.
template <typename Fn>
void for_each_thread_rows(int64_t rows, bool parallel, const Fn& fn) {
  const int64_t threads = parallel ? std::max(1, omp_get_max_threads()) : 1;
  const int64_t per_task =
      std::max<int64_t>(kGemvRowAlign, ((rows + threads - 1) / threads + kGemvRowAlign - 1) / kGemvRowAlign * kGemvRowAlign);
  const int64_t tasks = (rows + per_task - 1) / per_task;
#pragma omp parallel for schedule(static) if (tasks > 1)
  for (int64_t t = 0; t < tasks; ++t) fn(t * per_task, std::min(rows, (t + 1) * per_task));
}

}  // namespace fsq::cpu
