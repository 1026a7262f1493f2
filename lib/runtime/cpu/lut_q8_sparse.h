// The CSR part of the int8-activation LUT GEMV (lut_q8_kernels.h), added in float from x
// itself, written once over the ISA's `Ops` (half(bits) -> float, sparse_dot(x, col, val,
// count) = sum_e x[col[e]] * val[e]). Internal linkage only, so each ISA file gets its own
// copy compiled with its own flags (uniform_isa.h says why); include only from the q8 LUT
// loops (lut_q8_loops.h, lut_q8_avx2.cpp).
#pragma once

#include <cstdint>

#include "runtime/cpu/lut_q8_isa.h"
#include "runtime/cpu/prefetch.h"

namespace fsq::cpu {
namespace {

template <class Ops, int M, typename Col>
void lut_q8_sparse_rows(const LutQ8Batch& b, const Col* col, int64_t row0, int64_t row1) {
  const LutWeightsView& w = *b.w;
  for (int64_t n = row0; n < row1; ++n) {
    const int64_t begin = w.row_ptr[n], count = w.row_ptr[n + 1] - begin;
    prefetch_csr_ahead(col, w.val, begin);
    if (count == 0) continue;
    for (int i = 0; i < M; ++i)
      b.y[i * b.y_stride + n] += Ops::sparse_dot(b.x + i * b.x_stride, col + begin, w.val + begin, count);
  }
}

// The CSR part of rows [row0, row1) as one stream of nonzeros (their rows from
// t->sparse_rows), each product added to its row's sum in b.sparse_sums (this thread's rows
// of it zeroed first), then the sums to y: no loop and no branch per row. SmolLM2's rows
// hold ~2.6 nonzeros at 0.45 %, and the per-row loop (lut_q8_sparse_rows) runs once per row
// and row of x. Measured: SmolLM2 squeezellm w4 + 0.45 % sparse, 1 thread, decode batch 8
// 278-289 -> 338-340 tok/s (the dense checkpoint: 324-366), batch 1 unchanged within noise;
// a standalone loop over 192k such rows (~500k nonzeros) took 1.6-1.7 ms, against 0.5 ms as
// one stream. Each row's sum is one chain in column order, added to y once: the rounding
// the kernel tests bound for a row's CSR sum.
template <class Ops, int M, typename Col>
void lut_q8_sparse_stream(const LutQ8Batch& b, const Col* col, int64_t row0, int64_t row1) {
  const LutWeightsView& w = *b.w;
  const uint16_t* row_of = b.t->sparse_rows;
  float* sums = b.sparse_sums;
  for (int i = 0; i < M; ++i)
    for (int64_t n = row0; n < row1; ++n) sums[i * w.rows + n] = 0.0f;
  const int64_t end = w.row_ptr[row1];
  for (int64_t e = w.row_ptr[row0]; e < end; ++e) {
    const int64_t n = row_of[e];
    const float v = Ops::half(w.val[e]);
    const float* x = b.x + col[e];
    for (int i = 0; i < M; ++i) sums[i * w.rows + n] = __builtin_fmaf(x[i * b.x_stride], v, sums[i * w.rows + n]);
  }
  for (int i = 0; i < M; ++i)
    for (int64_t n = row0; n < row1; ++n) b.y[i * b.y_stride + n] += sums[i * w.rows + n];
}

// The CSR part of rows [row0, row1): as one stream where the batch has its scratch sums.
template <class Ops, int M, typename Col>
void lut_q8_sparse_cols(const LutQ8Batch& b, const Col* col, int64_t row0, int64_t row1) {
  if (b.sparse_sums != nullptr)
    lut_q8_sparse_stream<Ops, M>(b, col, row0, row1);
  else
    lut_q8_sparse_rows<Ops, M>(b, col, row0, row1);
}

// Adds the CSR part of rows [row0, row1) to y, where the matrix has one.
template <class Ops, int M>
void lut_q8_sparse(const LutQ8Batch& b, int64_t row0, int64_t row1) {
  const LutWeightsView& w = *b.w;
  if (w.row_ptr == nullptr) return;
  if (w.col_type == LutColType::I32)
    lut_q8_sparse_cols<Ops, M>(b, static_cast<const int32_t*>(w.col), row0, row1);
  else
    lut_q8_sparse_cols<Ops, M>(b, static_cast<const uint16_t*>(w.col), row0, row1);
}

}  // namespace
}  // namespace fsq::cpu
