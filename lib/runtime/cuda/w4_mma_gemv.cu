// W4A16 GEMV/skinny GEMM on tensor cores (mma.sync m16n8k16, sm_80+) for the 4-bit uniform
// type with groups of 64 columns or more: 16 weight rows are the A operand, up to 16 rows of
// x the B operand (two 8-column tiles), fp32 accumulators.
//
// The file layout is used as is. A thread of a quad (lanes 4g..4g+3, i = lane % 4) reads
// 16 consecutive codes (8 bytes) of each of its two rows per 64-column span, and the mma's
// k positions are permuted so that these are exactly the codes the thread's fragment needs:
// a dot product does not care in which order k runs, as long as x is permuted the same way.
// One LOP3 turns codes t and t + 4 of a word into the half pair (1024 + q_t, 1024 + q_t+4);
// subtracting (1024 + z) is exact, so the mma multiplies x by the exact integers q - z and
// the group's scale is applied to the fp32 partial sum of each span (a span lies in one
// group because groups are multiples of 64 columns).
//
// Each block takes 16 rows; its warps split the columns (split-K) and sum their partial
// results through shared memory in a fixed order, so the output does not depend on timing.
#include "runtime/cuda/gemv_common.cuh"
#include "runtime/cuda/quant_gemv.h"
#include "runtime/cuda/w4_mma_gemv.h"

namespace fsq::cuda::detail {
namespace {

constexpr int kSplitWarps = 8;
constexpr int kSpanCols = 64;

// The mma's operand types: Pair holds two Act values in 32 bits; codes go in as the halves
// (magic + q), exact integers in the type's mantissa.
template <class Act>
struct MmaTypes;

template <>
struct MmaTypes<__half> {
  using Pair = __half2;
  static constexpr uint32_t kMagic = 0x64006400u;  // 1024.0 in both halves
  static constexpr float kMagicValue = 1024.f;
  __device__ static Pair splat_pair(float v) { return __float2half2_rn(v); }
};

template <>
struct MmaTypes<__nv_bfloat16> {
  using Pair = __nv_bfloat162;
  static constexpr uint32_t kMagic = 0x43004300u;  // 128.0 in both bf16 halves (7 mantissa bits hold q < 128)
  static constexpr float kMagicValue = 128.f;
  __device__ static Pair splat_pair(float v) { return __float2bfloat162_rn(v); }
};

// a - b on both halves.
template <class Act>
__device__ __forceinline__ uint32_t mma_minus(uint32_t a, uint32_t b) {
  using Pair = typename MmaTypes<Act>::Pair;
  const Pair r = __hsub2(*reinterpret_cast<const Pair*>(&a), *reinterpret_cast<const Pair*>(&b));
  return *reinterpret_cast<const uint32_t*>(&r);
}

// v rounded into both halves.
template <class Act>
__device__ __forceinline__ uint32_t mma_splat(float v) {
  const typename MmaTypes<Act>::Pair h = MmaTypes<Act>::splat_pair(v);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// c += A B: mma.sync m16n8k16 with fp32 accumulators, A and B of type TYPE ("f16" or "bf16").
#define FSQ_MMA_M16N8K16(TYPE)                                                                          \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." TYPE "." TYPE ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, " \
               "{%8,%9}, {%0,%1,%2,%3};\n"                                                              \
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                                        \
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1))

template <class Act>
__device__ __forceinline__ void mma(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                    uint32_t b1) {
  if constexpr (std::is_same_v<Act, __half>)
    FSQ_MMA_M16N8K16("f16");
  else
    FSQ_MMA_M16N8K16("bf16");
}

#undef FSQ_MMA_M16N8K16

// Pair p (0..7) of a thread's 16 codes: codes (8w + t, 8w + t + 4) with w = p / 4, t = p % 4,
// as (magic + q) halves.
template <class Act>
__device__ __forceinline__ uint32_t code_pair(uint2 q, int p) {
  const uint32_t word = p < 4 ? q.x : q.y;
  return ((word >> (4 * (p % 4))) & 0x000f000fu) | MmaTypes<Act>::kMagic;
}

// The x values at the same k as code_pair(p): halves j and j + 4 of the thread's 16 (j = 8w + t),
// from X[0..7] = the 16 halves as pairs (2c, 2c + 1).
__device__ __forceinline__ uint32_t x_pair(const uint32_t (&xw)[8], int p) {
  const int j = 8 * (p / 4) + p % 4;
  return __byte_perm(xw[j / 2], xw[j / 2 + 2], j % 2 == 0 ? 0x5410 : 0x7632);
}

template <class Act, int NT>
__global__ void __launch_bounds__(kSplitWarps * 32)
    w4_mma_kernel(cpu::UniformWeightsView w, const Act* __restrict__ x, int64_t x_stride, Act* __restrict__ y,
                  int64_t y_stride, int m) {
  __shared__ float partial[kSplitWarps][NT][4][32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, i = lane % 4;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * 16;
  const int64_t ra = min(row0 + g, w.rows - 1), rb = min(row0 + g + 8, w.rows - 1);
  const int64_t spans = w.cols / kSpanCols, per_warp = (spans + kSplitWarps - 1) / kSplitWarps;
  const int64_t span_begin = warp * per_warp, span_end = min(spans, span_begin + per_warp);
  const int64_t groups = w.cols / w.group_cols, spans_per_group = w.group_cols / kSpanCols;
  // The thread's 16 codes of a span start at word 8 * span + 2 * i of its rows.
  const uint32_t* words_a = w.words + ra * w.words_per_row + 2 * i;
  const uint32_t* words_b = w.words + rb * w.words_per_row + 2 * i;

  float acc[NT][4] = {};
  // One span per iteration; 4 blocks of 8 warps fit an SM at 64 registers, and that measured
  // faster on an H200 than loading 4 spans ahead at 3 blocks per SM (8.0 vs 8.3 us at 4096 x
  // 4096, 15.2 vs 17.3 us at 11008 x 4096, batch 1).
#pragma unroll 4
  for (int64_t sp = span_begin; sp < span_end; ++sp) {
    const uint2 qa = __ldg(reinterpret_cast<const uint2*>(words_a + 8 * sp));
    const uint2 qb = __ldg(reinterpret_cast<const uint2*>(words_b + 8 * sp));
    const int64_t grp = sp / spans_per_group;
    const float scale_a = f16_bits_to_float(__ldg(w.scales + ra * groups + grp));
    const float scale_b = f16_bits_to_float(__ldg(w.scales + rb * groups + grp));
    const float zero_a = w.zeros ? __ldg(w.zeros + ra * groups + grp) : 8.f;
    const float zero_b = w.zeros ? __ldg(w.zeros + rb * groups + grp) : 8.f;
    uint32_t xw[NT][8];
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      const int n = 8 * t + g;  // this thread's batch row in tile t
      if (n < m) {
        const uint4* xp = reinterpret_cast<const uint4*>(x + n * x_stride + sp * kSpanCols + 16 * i);
        const uint4 v0 = __ldg(xp), v1 = __ldg(xp + 1);
        xw[t][0] = v0.x, xw[t][1] = v0.y, xw[t][2] = v0.z, xw[t][3] = v0.w;
        xw[t][4] = v1.x, xw[t][5] = v1.y, xw[t][6] = v1.z, xw[t][7] = v1.w;
      } else {
#pragma unroll
        for (int j = 0; j < 8; ++j) xw[t][j] = 0u;
      }
    }
    const uint32_t magic_zero_a = mma_splat<Act>(MmaTypes<Act>::kMagicValue + zero_a);
    const uint32_t magic_zero_b = mma_splat<Act>(MmaTypes<Act>::kMagicValue + zero_b);
    float span_sum[NT][4] = {};
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      const uint32_t a0 = mma_minus<Act>(code_pair<Act>(qa, 2 * s), magic_zero_a);
      const uint32_t a1 = mma_minus<Act>(code_pair<Act>(qb, 2 * s), magic_zero_b);
      const uint32_t a2 = mma_minus<Act>(code_pair<Act>(qa, 2 * s + 1), magic_zero_a);
      const uint32_t a3 = mma_minus<Act>(code_pair<Act>(qb, 2 * s + 1), magic_zero_b);
#pragma unroll
      for (int t = 0; t < NT; ++t)
        mma<Act>(span_sum[t], a0, a1, a2, a3, x_pair(xw[t], 2 * s), x_pair(xw[t], 2 * s + 1));
    }
#pragma unroll
    for (int t = 0; t < NT; ++t) {  // c0, c1: row g; c2, c3: row g + 8
      acc[t][0] = fmaf(scale_a, span_sum[t][0], acc[t][0]);
      acc[t][1] = fmaf(scale_a, span_sum[t][1], acc[t][1]);
      acc[t][2] = fmaf(scale_b, span_sum[t][2], acc[t][2]);
      acc[t][3] = fmaf(scale_b, span_sum[t][3], acc[t][3]);
    }
  }
#pragma unroll
  for (int t = 0; t < NT; ++t)
#pragma unroll
    for (int e = 0; e < 4; ++e) partial[warp][t][e][lane] = acc[t][e];
  __syncthreads();
  if (warp != 0) return;
#pragma unroll
  for (int t = 0; t < NT; ++t) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      float sum = 0.f;
#pragma unroll
      for (int k = 0; k < kSplitWarps; ++k) sum += partial[k][t][e][lane];
      const int64_t row = row0 + g + (e >= 2 ? 8 : 0);
      const int n = 8 * t + 2 * i + (e & 1);
      if (row < w.rows && n < m) y[n * y_stride + row] = ActTraits<Act>::from_float(sum);
    }
  }
}

template <class Act>
std::string launch_typed(const cpu::UniformWeightsView& w, const Act* x, int64_t m, int64_t x_stride, Act* y,
                         int64_t y_stride, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((w.rows + 15) / 16)), block(kSplitWarps * 32);
  const int mi = static_cast<int>(m);
  if (m <= 8)
    w4_mma_kernel<Act, 1><<<grid, block, 0, stream>>>(w, x, x_stride, y, y_stride, mi);
  else
    w4_mma_kernel<Act, 2><<<grid, block, 0, stream>>>(w, x, x_stride, y, y_stride, mi);
  return error_text(cudaGetLastError());
}

}  // namespace

bool w4_mma_applies(const cpu::UniformWeightsView& w) {
  return w.bits == 4 && w.cols % kSpanCols == 0 && w.group_cols % kSpanCols == 0;
}

std::string launch_w4_mma(const cpu::UniformWeightsView& w, const void* x, int64_t m, int64_t x_stride, void* y,
                          int64_t y_stride, ActType act, cudaStream_t stream) {
  if (act == ActType::F16)
    return launch_typed<__half>(w, static_cast<const __half*>(x), m, x_stride, static_cast<__half*>(y), y_stride,
                                stream);
  return launch_typed<__nv_bfloat16>(w, static_cast<const __nv_bfloat16*>(x), m, x_stride,
                                     static_cast<__nv_bfloat16*>(y), y_stride, stream);
}

}  // namespace fsq::cuda::detail
