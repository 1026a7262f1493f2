// The LUT-type GEMV kernel template (dense codes looked up in a per-row table, then the
// row's CSR nonzeros) and its launcher; lut_gemv_lut<BITS>.cu instantiates each width.
#pragma once

#include "runtime/cuda/gemv_common.cuh"
#include "runtime/cuda/quant_gemv.h"

namespace fsq::cuda::detail {

// Each warp keeps its rows' tables in shared memory as floats: 16 entries of a row sit in 16
// different banks, so a lookup of any 32 codes is one conflict-free access.
constexpr int kLutSlots = 16;

// Codes 8s..8s+7 of a chunk as table indices.
template <int BITS>
__device__ __forceinline__ void chunk_indices(const uint32_t (&w)[BITS], int s, uint32_t (&q)[8]) {
  if constexpr (BITS == 4) {
    const uint32_t lo = w[s] & 0x0f0f0f0fu, hi = (w[s] >> 4) & 0x0f0f0f0fu;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      q[2 * b] = __byte_perm(lo, 0, 0x4440 + b);
      q[2 * b + 1] = __byte_perm(hi, 0, 0x4440 + b);
    }
  } else {
#pragma unroll
    for (int j = 0; j < 8; ++j) q[j] = chunk_code<BITS>(w, 8 * s + j);
  }
}

template <class Col>
__device__ __forceinline__ int64_t sparse_col(const void* col, int64_t i) {
  return __ldg(static_cast<const Col*>(col) + i);
}

// One warp per kRowsPerWarp output rows, lanes over 32-code chunks as in the uniform kernel;
// then the same warp adds its rows' CSR nonzeros (lanes stride over them, so a row with many
// outliers is split evenly across the warp) before the fixed-order warp sum.
template <int BITS, class Act, int MB, class Col, int R = kRowsPerWarp, int U = kChunksInFlight,
          int WARPS = kWarpsPerBlock>
__global__ void __launch_bounds__(WARPS * 32)
    lut_gemv_kernel(cpu::LutWeightsView w, const Act* __restrict__ x, int64_t x_stride, Act* __restrict__ y,
                    int64_t y_stride, int mvalid) {
  constexpr int kLevels = 1 << BITS;
  __shared__ float tables[WARPS][R][kLutSlots];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t row0 = (static_cast<int64_t>(blockIdx.x) * WARPS + warp) * R;
  if (row0 >= w.rows) return;  // whole warps only
  int64_t row[R];
#pragma unroll
  for (int r = 0; r < R; ++r) row[r] = min(row0 + r, w.rows - 1);
  for (int slot = lane; slot < R * kLutSlots; slot += 32) {
    const int r = slot / kLutSlots, e = slot % kLutSlots;
    const int64_t table_row = min(row0 + r, w.rows - 1);
    tables[warp][r][e] = e < kLevels ? f16_bits_to_float(__ldg(w.lut + table_row * kLevels + e)) : 0.f;
  }
  __syncwarp();
  const int64_t chunks = w.cols / kCodesPerChunk;

  float acc[R][MB] = {};
  for (int64_t c0 = lane; c0 < chunks; c0 += 32 * U) {
    uint32_t words[U][R][BITS];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t c = c0 + 32 * u;
      if (c >= chunks) break;
#pragma unroll
      for (int r = 0; r < R; ++r) load_chunk<BITS>(w.words + row[r] * w.words_per_row, c, words[u][r]);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t c = c0 + 32 * u;
      if (c >= chunks) break;
      for_each_x8<Act, MB>(x, x_stride, c, mvalid, [&](int s, const float (&xf)[MB][8]) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
          uint32_t q[8];
          chunk_indices<BITS>(words[u][r], s, q);
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            const float weight = tables[warp][r][q[j]];
#pragma unroll
            for (int b = 0; b < MB; ++b) acc[r][b] = fmaf(xf[b][j], weight, acc[r][b]);
          }
        }
      });
    }
  }
  if (w.row_ptr != nullptr) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int64_t begin = __ldg(w.row_ptr + row[r]), end = __ldg(w.row_ptr + row[r] + 1);
      for (int64_t i = begin + lane; i < end; i += 32) {
        const int64_t k = sparse_col<Col>(w.col, i);
        const float v = f16_bits_to_float(__ldg(w.val + i));
#pragma unroll
        for (int b = 0; b < MB; ++b)
          if (b < mvalid) acc[r][b] = fmaf(ActTraits<Act>::to_float(x + b * x_stride + k), v, acc[r][b]);
      }
    }
  }
  store_warp_sums<Act, R, MB>(acc, lane, row0, w.rows, mvalid, y, y_stride);
}

template <int BITS, class Act, class Col>
std::string launch_lut_typed(const cpu::LutWeightsView& w, const Act* x, int64_t m, int64_t x_stride, Act* y,
                             int64_t y_stride, cudaStream_t stream) {
  const dim3 grid = rows_grid(w.rows), block(kWarpsPerBlock * 32);
  return for_each_batch_tier(m, [&](auto tier, int64_t i, int valid) {
    lut_gemv_kernel<BITS, Act, decltype(tier)::value, Col>
        <<<grid, block, 0, stream>>>(w, x + i * x_stride, x_stride, y + i * y_stride, y_stride, valid);
  });
}

template <int BITS, class Act>
std::string launch_lut_act(const cpu::LutWeightsView& w, const void* x, int64_t m, int64_t x_stride, void* y,
                           int64_t y_stride, cudaStream_t stream) {
  const Act* xa = static_cast<const Act*>(x);
  Act* ya = static_cast<Act*>(y);
  if (w.col_type == cpu::LutColType::U16) return launch_lut_typed<BITS, Act, uint16_t>(w, xa, m, x_stride, ya, y_stride, stream);
  return launch_lut_typed<BITS, Act, int32_t>(w, xa, m, x_stride, ya, y_stride, stream);
}

// Launches the BITS-bit LUT kernel for activation type `act`; arguments already checked.
template <int BITS>
std::string launch_lut(const cpu::LutWeightsView& w, const void* x, int64_t m, int64_t x_stride, void* y,
                       int64_t y_stride, ActType act, cudaStream_t stream) {
  if (act == ActType::F16) return launch_lut_act<BITS, __half>(w, x, m, x_stride, y, y_stride, stream);
  return launch_lut_act<BITS, __nv_bfloat16>(w, x, m, x_stride, y, y_stride, stream);
}

}  // namespace fsq::cuda::detail
