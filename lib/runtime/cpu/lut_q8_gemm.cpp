// lut_gemm_q8: the prefill GEMM of 3- and 4-bit LUT weights on int8 activations. The dense part is
// uniform_gemm_q8's VNNI kernel with each row's int8 table entries in place of code - zero
// (uniform_q8_isa.h, Q8GemmWeights); the CSR part is added in float afterwards, one weight
// row at a time over a block of rows of x (x transposed, so each nonzero is one
// vectorizable pass over the block's rows).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/half.h"
#include "runtime/cpu/int8_kernels.h"  // cpu_has_avx512_vnni
#include "runtime/cpu/lut_q8_kernels.h"
#include "runtime/cpu/transpose.h"
#include "runtime/cpu/uniform_q8_isa.h"

namespace fsq::cpu {
namespace {

constexpr int64_t kTransposeTile = 16;  // threads take strips of 16 columns of x (rows of y)
// The rows of x are taken in blocks whose transposed copy (cols x block floats) stays within
// about this many bytes, so that every nonzero's pass over its column of the block reads L2,
// not DRAM (a whole 2048-token window of SmolLM2's down_proj transposed is 12.6 MB).
constexpr int64_t kSparseBlockBytes = int64_t{256} << 10;
constexpr int64_t kMinSparseBlockRows = 16, kMaxSparseBlockRows = 256;

// sum[i] += v * column[i] for i < m: vectorizes (no aliasing; an AVX-512 version measured no
// faster on SmolLM2's prompts).
void axpy(float v, const float* __restrict column, float* __restrict sum, int64_t m) {
  for (int64_t i = 0; i < m; ++i) sum[i] += v * column[i];
}

int64_t sparse_block_rows(int64_t cols) {
  const int64_t fit = kSparseBlockBytes / (cols * int64_t{sizeof(float)});
  return std::clamp(fit / kMinSparseBlockRows * kMinSparseBlockRows, kMinSparseBlockRows, kMaxSparseBlockRows);
}

// y[i, n] += sum over row n's nonzeros of x[i, col] * val, for rows i of x in blocks of
// sparse_block_rows: each element is summed over its row's nonzeros in order, whatever the
// blocks and threads.
template <typename Col>
void add_sparse_part(const LutWeightsView& w, const Col* col, const float* x, int64_t m, int64_t x_stride, float* y,
                     int64_t y_stride) {
  const int64_t block = std::min(m, sparse_block_rows(w.cols));
  std::vector<float> xt(static_cast<size_t>(w.cols * block));  // xt[k * mb + i] = x[i0 + i, k]
  std::vector<float> yt(static_cast<size_t>(w.rows * block));
#pragma omp parallel
  for (int64_t i0 = 0; i0 < m; i0 += block) {
    const int64_t mb = std::min(block, m - i0);
    const float* xb = x + i0 * x_stride;
    float* yb = y + i0 * y_stride;
#pragma omp for schedule(static)
    for (int64_t k0 = 0; k0 < w.cols; k0 += kTransposeTile)
      transpose_f32(xb + k0, x_stride, mb, std::min(kTransposeTile, w.cols - k0), xt.data() + k0 * mb, mb);
    // yt[n * mb + i]: row n's sparse sums, contiguous, then added into y in tiles (adding them
    // row by row strides through y and missed the cache on every element).
#pragma omp for schedule(static)
    for (int64_t n = 0; n < w.rows; ++n) {
      float* sum = yt.data() + n * mb;
      std::fill(sum, sum + mb, 0.0f);
      for (int32_t e = w.row_ptr[n]; e < w.row_ptr[n + 1]; ++e)
        axpy(f16_to_f32(w.val[e]), xt.data() + static_cast<int64_t>(col[e]) * mb, sum, mb);
    }
#pragma omp for schedule(static)
    for (int64_t n0 = 0; n0 < w.rows; n0 += kTransposeTile)
      add_transposed_f32(yt.data() + n0 * mb, mb, std::min(kTransposeTile, w.rows - n0), mb, yb + n0, y_stride);
  }
}

// Whole activation blocks: what the VNNI tile kernel takes.
bool layout_supported(const LutWeightsView& w) { return (w.bits == 4 || w.bits == 3) && w.cols % kQ8BlockCols == 0; }

// 3-bit rows are unpacked with VBMI's byte permutes (lut_q8_avx512vbmi.cpp).
bool isa_available(const LutWeightsView& w, CpuIsa isa) {
  return isa == CpuIsa::Avx512 && cpu_supports(isa) && cpu_has_avx512_vnni() && (w.bits == 4 || cpu_has_avx512_vbmi());
}

}  // namespace

bool lut_gemm_q8_supported(const LutWeightsView& w, CpuIsa isa) {
  return check_lut_view(w) == KernelStatus::Ok && layout_supported(w) && isa_available(w, isa);
}

KernelStatus lut_gemm_q8(const LutWeightsView& w, const LutQ8Tables& t, const float* x, int64_t m, int64_t x_stride,
                         float* y, int64_t y_stride, CpuIsa isa) {
  if (check_lut_view(w) != KernelStatus::Ok || t.tables == nullptr || t.scales == nullptr || m < 0 ||
      (m > 0 && (x == nullptr || y == nullptr)) || x_stride < w.cols || y_stride < w.rows)
    return KernelStatus::InvalidArgument;
  if (!layout_supported(w)) return KernelStatus::InvalidArgument;
  if (!isa_available(w, isa)) return KernelStatus::IsaUnavailable;
  if (m == 0) return KernelStatus::Ok;
  Q8GemmWeights weights;
  weights.lut = &w;
  weights.tables = &t;
  weights.rows = w.rows;
  weights.cols = w.cols;
  run_q8_gemm(weights, x, m, x_stride, y, y_stride);
  if (w.row_ptr != nullptr && w.nnz > 0) {
    if (w.col_type == LutColType::U16)
      add_sparse_part(w, static_cast<const uint16_t*>(w.col), x, m, x_stride, y, y_stride);
    else
      add_sparse_part(w, static_cast<const int32_t*>(w.col), x, m, x_stride, y, y_stride);
  }
  return KernelStatus::Ok;
}

}  // namespace fsq::cpu
