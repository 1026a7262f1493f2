// The uniform-type GEMV kernel template and its launcher; each uniform_gemv_w<BITS>.cu
// instantiates one bit width, so the widths compile in parallel.
#pragma once

#include "runtime/cuda/gemv_common.cuh"
#include "runtime/cuda/quant_gemv.h"

namespace fsq::cuda::detail {

// One warp per kRowsPerWarp output rows; lane l takes chunks l, l + 32, ... of 32 codes.
// Per chunk and row: sum_j x[j] * (q[j] - z) in float (exact integer weights), then times
// the group's scale, as the reference's (q - z) * scale but with the scale factored out of
// the chunk. The warp sums its lanes in a fixed butterfly order.
// R, U and WARPS default to the launcher's choice; the benchmark sweeps other values.
template <int BITS, class Act, int MB, int R = kRowsPerWarp, int U = kChunksInFlight, int WARPS = kWarpsPerBlock>
__global__ void __launch_bounds__(WARPS * 32)
    uniform_gemv_kernel(cpu::UniformWeightsView w, const Act* __restrict__ x, int64_t x_stride, Act* __restrict__ y,
                        int64_t y_stride, int mvalid) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t row0 = (static_cast<int64_t>(blockIdx.x) * WARPS + warp) * R;
  if (row0 >= w.rows) return;  // whole warps only: the shuffles below need all 32 lanes
  int64_t row[R];
#pragma unroll
  for (int r = 0; r < R; ++r) row[r] = min(row0 + r, w.rows - 1);  // past the end: recomputed, not stored
  const int64_t chunks = w.cols / kCodesPerChunk, groups = w.cols / w.group_cols;
  const int64_t chunks_per_group = w.group_cols / kCodesPerChunk;

  float acc[R][MB] = {};
  for (int64_t c0 = lane; c0 < chunks; c0 += 32 * U) {
    uint32_t words[U][R][BITS];
    float scale[U][R], zero_magic[U][R];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t c = c0 + 32 * u;
      if (c >= chunks) break;
      const int64_t g = c / chunks_per_group;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        load_chunk<BITS>(w.words + row[r] * w.words_per_row, c, words[u][r]);
        scale[u][r] = f16_bits_to_float(__ldg(w.scales + row[r] * groups + g));
        const int z = w.zeros ? __ldg(w.zeros + row[r] * groups + g) : 1 << (BITS - 1);
        zero_magic[u][r] = 8388608.f + static_cast<float>(z);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t c = c0 + 32 * u;
      if (c >= chunks) break;
      float part[R][MB] = {};
      for_each_x8<Act, MB>(x, x_stride, c, mvalid, [&](int s, const float (&xf)[MB][8]) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
          float q[8];
          codes_as_magic_floats<BITS>(words[u][r], s, q);
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            const float weight = q[j] - zero_magic[u][r];  // q - z, exact
#pragma unroll
            for (int b = 0; b < MB; ++b) part[r][b] = fmaf(xf[b][j], weight, part[r][b]);
          }
        }
      });
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int b = 0; b < MB; ++b) acc[r][b] = fmaf(scale[u][r], part[r][b], acc[r][b]);
    }
  }
  store_warp_sums<Act, R, MB>(acc, lane, row0, w.rows, mvalid, y, y_stride);
}

template <int BITS, class Act>
std::string launch_uniform_typed(const cpu::UniformWeightsView& w, const Act* x, int64_t m, int64_t x_stride, Act* y,
                                 int64_t y_stride, cudaStream_t stream) {
  const dim3 grid = rows_grid(w.rows), block(kWarpsPerBlock * 32);
  return for_each_batch_tier(m, [&](auto tier, int64_t i, int valid) {
    uniform_gemv_kernel<BITS, Act, decltype(tier)::value>
        <<<grid, block, 0, stream>>>(w, x + i * x_stride, x_stride, y + i * y_stride, y_stride, valid);
  });
}

// Launches the BITS-bit kernel for activation type `act`; arguments already checked.
template <int BITS>
std::string launch_uniform(const cpu::UniformWeightsView& w, const void* x, int64_t m, int64_t x_stride, void* y,
                           int64_t y_stride, ActType act, cudaStream_t stream) {
  if (act == ActType::F16)
    return launch_uniform_typed<BITS, __half>(w, static_cast<const __half*>(x), m, x_stride, static_cast<__half*>(y),
                                              y_stride, stream);
  return launch_uniform_typed<BITS, __nv_bfloat16>(w, static_cast<const __nv_bfloat16*>(x), m, x_stride,
                                                   static_cast<__nv_bfloat16*>(y), y_stride, stream);
}

}  // namespace fsq::cuda::detail
