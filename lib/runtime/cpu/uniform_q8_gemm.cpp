// uniform_gemm_q8: the layout check, the activation quantization (the same quantize_q8_row
// as the GEMV, codes biased to unsigned), and the tile packing the VNNI kernel calls once per
// tile of 32 weight rows (baseline code, so it may use packed_code.h).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/half.h"
#include "runtime/cpu/int8_kernels.h"  // cpu_has_avx512_vnni
#include "runtime/cpu/packed_code.h"
#include "runtime/cpu/uniform_q8_isa.h"
#include "runtime/cpu/uniform_q8_kernels.h"

namespace fsq::cpu {
namespace {

constexpr int64_t kParallelMinRows = 4;  // quantize rows of x in parallel from this many

// code - zero must fit a signed byte: |code - zero| <= 15 for 4 bits and fewer; 8-bit codes
// only against the symmetric zero 128.
bool q8_gemm_layout_supported(const UniformWeightsView& w) {
  if (!(w.bits <= 4 || (w.bits == 8 && w.zeros == nullptr))) return false;
  return w.cols % kQ8BlockCols == 0 && w.group_cols % kQ8BlockCols == 0;
}

// The VNNI kernel is the only one.
bool q8_gemm_isa_available(CpuIsa isa) { return isa == CpuIsa::Avx512 && cpu_supports(isa) && cpu_has_avx512_vnni(); }

}  // namespace

void unpack_q8_gemm_rows(const UniformWeightsView& w, int64_t n0, int8_t* out) {
  const int64_t groups = w.cols / w.group_cols;
  for (int64_t t = 0; t < kQ8TileRows; ++t) {
    const int64_t n = n0 + t;
    int8_t* dst = out + t * w.cols;
    if (n >= w.rows) {
      std::fill(dst, dst + w.cols, int8_t{0});
      continue;
    }
    const uint32_t* row = w.words + n * w.words_per_row;
    for (int64_t g = 0; g < groups; ++g) {
      const int zero = zero_point(w, n, g);
      for (int64_t k = g * w.group_cols; k < (g + 1) * w.group_cols; ++k)
        dst[k] = static_cast<int8_t>(static_cast<int>(packed_code(row, k, w.bits)) - zero);
    }
  }
}

void fill_q8_gemm_tile_scales(const Q8GemmWeights& w, int64_t n0, const Q8GemmTile& tile) {
  const int64_t blocks = w.cols / kQ8BlockCols;
  for (int64_t t = 0; t < kQ8TileRows; ++t) {
    const int64_t n = n0 + t;
    for (int64_t b = 0; b < blocks; ++b) {
      float scale = 0.0f;
      if (n < w.rows && w.lut != nullptr) {
        scale = w.tables->scales[n];
      } else if (n < w.rows) {
        const UniformWeightsView& u = *w.uniform;
        scale = f16_to_f32(u.scales[n * (u.cols / u.group_cols) + b * kQ8BlockCols / u.group_cols]);
      }
      tile.scales[b * kQ8TileRows + t] = scale;
    }
  }
}

void run_q8_gemm(const Q8GemmWeights& w, const float* x, int64_t m, int64_t x_stride, float* y, int64_t y_stride) {
  const int64_t blocks = w.cols / kQ8BlockCols;
  std::vector<uint8_t> codes(static_cast<size_t>(m * w.cols));
  std::vector<float> scales(static_cast<size_t>(m * blocks));
#pragma omp parallel if (m >= kParallelMinRows)
  {
    std::vector<int8_t> q(static_cast<size_t>(w.cols));
#pragma omp for schedule(static)
    for (int64_t i = 0; i < m; ++i) {
      quantize_q8_row_fast(x + i * x_stride, w.cols, q.data(), scales.data() + i * blocks);
      uint8_t* out = codes.data() + i * w.cols;
      for (int64_t k = 0; k < w.cols; ++k) out[k] = static_cast<uint8_t>(q[static_cast<size_t>(k)] + 128);
    }
  }
  Q8GemmArgs args;
  args.w = &w;
  args.m = m;
  args.x = codes.data();
  args.x_stride = w.cols;
  args.d = scales.data();
  args.d_stride = blocks;
  args.y = y;
  args.y_stride = y_stride;
  q8_gemm_avx512vnni(args);
}

bool uniform_gemm_q8_supported(const UniformWeightsView& w, CpuIsa isa) {
  return check_uniform_view(w) == KernelStatus::Ok && q8_gemm_layout_supported(w) && q8_gemm_isa_available(isa);
}

KernelStatus uniform_gemm_q8(const UniformWeightsView& w, const float* x, int64_t m, int64_t x_stride, float* y,
                             int64_t y_stride, CpuIsa isa) {
  if (check_matmul_call(w, x, m, x_stride, y, y_stride) != KernelStatus::Ok || !q8_gemm_layout_supported(w))
    return KernelStatus::InvalidArgument;
  if (!q8_gemm_isa_available(isa)) return KernelStatus::IsaUnavailable;
  Q8GemmWeights weights;
  weights.uniform = &w;
  weights.rows = w.rows;
  weights.cols = w.cols;
  run_q8_gemm(weights, x, m, x_stride, y, y_stride);
  return KernelStatus::Ok;
}

}  // namespace fsq::cpu
