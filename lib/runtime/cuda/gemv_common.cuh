// Device helpers shared by the quantized GEMV kernels: activation loads, the decoding of
// packed codes into exact floats, warp sums, the row-per-warp kernels' tile constants,
// epilogue and batch-tier launch loop. CUDA translation units only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <type_traits>

namespace fsq::cuda::detail {

// A warp computes kRowsPerWarp output rows; each lane takes 32-code chunks of the row, and
// kChunksInFlight chunks are loaded before any is used, so enough bytes are in flight to
// approach the memory bandwidth at batch 1.
constexpr int kWarpsPerBlock = 4;
constexpr int kRowsPerWarp = 2;
constexpr int kChunksInFlight = 4;
constexpr int kCodesPerChunk = 32;

template <class Act>
struct ActTraits;

template <>
struct ActTraits<__half> {
  // 8 activations (one 16-byte load) to floats.
  __device__ static void to_float8(uint4 v, float* f) {
    const __half2* h = reinterpret_cast<const __half2*>(&v);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 p = __half22float2(h[i]);
      f[2 * i] = p.x;
      f[2 * i + 1] = p.y;
    }
  }
  __device__ static float to_float(const __half* p) { return __half2float(*p); }
  __device__ static __half from_float(float v) { return __float2half_rn(v); }
};

template <>
struct ActTraits<__nv_bfloat16> {
  __device__ static void to_float8(uint4 v, float* f) {
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {  // bf16 is the top half of a float
      f[2 * i] = __uint_as_float(w[i] << 16);
      f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
  }
  __device__ static float to_float(const __nv_bfloat16* p) { return __bfloat162float(*p); }
  __device__ static __nv_bfloat16 from_float(float v) { return __float2bfloat16_rn(v); }
};

// The BITS words holding 32 consecutive codes of a row (chunk c starts at word c * BITS).
template <int BITS>
__device__ __forceinline__ void load_chunk(const uint32_t* row, int64_t chunk, uint32_t (&w)[BITS]) {
  const uint32_t* p = row + chunk * BITS;
  if constexpr (BITS == 4) {
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
  } else if constexpr (BITS == 8) {
    const uint4 a = __ldg(reinterpret_cast<const uint4*>(p));
    const uint4 b = __ldg(reinterpret_cast<const uint4*>(p) + 1);
    w[0] = a.x, w[1] = a.y, w[2] = a.z, w[3] = a.w, w[4] = b.x, w[5] = b.y, w[6] = b.z, w[7] = b.w;
  } else if constexpr (BITS == 2) {
    const uint2 v = __ldg(reinterpret_cast<const uint2*>(p));
    w[0] = v.x, w[1] = v.y;
  } else {
#pragma unroll
    for (int i = 0; i < BITS; ++i) w[i] = __ldg(p + i);
  }
}

// Code j (0..31, a compile-time constant after unrolling) of a chunk, as an integer.
template <int BITS>
__device__ __forceinline__ uint32_t chunk_code(const uint32_t (&w)[BITS], int j) {
  const int bit = j * BITS, word = bit / 32, off = bit % 32;
  uint32_t v = w[word] >> off;
  if (off + BITS > 32) v = __funnelshift_r(w[word], w[word + 1], off);
  return v & ((1u << BITS) - 1);
}

// Codes 8u..8u+7 of a chunk as floats 2^23 + q (exact): the code is written into the low
// mantissa bits of 2^23, which costs one byte permute per code for byte-aligned nibbles
// instead of an integer-to-float conversion. Subtracting 2^23 + z afterwards is exact.
template <int BITS>
__device__ __forceinline__ void codes_as_magic_floats(const uint32_t (&w)[BITS], int u, float (&q)[8]) {
  constexpr uint32_t kMagic = 0x4b000000u;  // 2^23
  if constexpr (BITS == 4) {
    const uint32_t lo = w[u] & 0x0f0f0f0fu, hi = (w[u] >> 4) & 0x0f0f0f0fu;  // codes 0,2,4,6 / 1,3,5,7
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      q[2 * b] = __uint_as_float(__byte_perm(lo, kMagic, 0x7540 + b));
      q[2 * b + 1] = __uint_as_float(__byte_perm(hi, kMagic, 0x7540 + b));
    }
  } else if constexpr (BITS == 8) {
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      q[b] = __uint_as_float(__byte_perm(w[2 * u], kMagic, 0x7540 + b));
      q[4 + b] = __uint_as_float(__byte_perm(w[2 * u + 1], kMagic, 0x7540 + b));
    }
  } else {
#pragma unroll
    for (int j = 0; j < 8; ++j) q[j] = __uint_as_float(chunk_code<BITS>(w, 8 * u + j) | kMagic);
  }
}

// 8 activations x[k0 .. k0+8) of one batch row as floats.
template <class Act>
__device__ __forceinline__ void load_x8(const Act* x, int64_t k0, float (&f)[8]) {
  ActTraits<Act>::to_float8(__ldg(reinterpret_cast<const uint4*>(x + k0)), f);
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float f16_bits_to_float(uint16_t h) { return __half2float(__ushort_as_half(h)); }

// Activations x[k0 .. k0+8) of batch rows 0 .. MB-1 (row stride x_stride) as floats; rows
// from mvalid on (a tier's unused rows) are zeros.
template <class Act, int MB>
__device__ __forceinline__ void load_x8_rows(const Act* x, int64_t x_stride, int64_t k0, int mvalid,
                                             float (&xf)[MB][8]) {
#pragma unroll
  for (int b = 0; b < MB; ++b) {
    if (b < mvalid) {
      load_x8(x + b * x_stride, k0, xf[b]);
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j) xf[b][j] = 0.f;
    }
  }
}

// The row-per-warp GEMVs' inner loop over chunk c (kCodesPerChunk codes from column
// c * kCodesPerChunk): for each 8 codes s, body(s, xf) with xf the matching 8 activations of
// every batch row (load_x8_rows).
template <class Act, int MB, class Body>
__device__ __forceinline__ void for_each_x8(const Act* x, int64_t x_stride, int64_t c, int mvalid, const Body& body) {
#pragma unroll
  for (int s = 0; s < kCodesPerChunk / 8; ++s) {
    float xf[MB][8];
    load_x8_rows<Act, MB>(x, x_stride, c * kCodesPerChunk + 8 * s, mvalid, xf);
    body(s, xf);
  }
}

// The row-per-warp GEMVs' epilogue: each of the warp's R rows' MB partial sums added over the
// lanes (warp_sum's fixed order; every lane takes part), and lane 0 stores the rows that exist
// and the batch rows that are valid.
template <class Act, int R, int MB>
__device__ __forceinline__ void store_warp_sums(const float (&acc)[R][MB], int lane, int64_t row0, int64_t rows,
                                                int mvalid, Act* y, int64_t y_stride) {
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int b = 0; b < MB; ++b) {
      const float sum = warp_sum(acc[r][b]);
      if (lane == 0 && row0 + r < rows && b < mvalid) y[b * y_stride + row0 + r] = ActTraits<Act>::from_float(sum);
    }
  }
}

// "" for cudaSuccess, else the error text.
inline std::string error_text(cudaError_t e) { return e == cudaSuccess ? std::string() : cudaGetErrorString(e); }

// The batch sizes the kernels are compiled for (1, 2, 4, 8): a call of m rows runs passes of
// 8 rows, then one pass of the smallest size that holds the rest (unused rows are masked).
inline int batch_tier(int64_t remaining) {
  if (remaining >= 5) return 8;
  if (remaining >= 3) return 4;
  return static_cast<int>(remaining);
}

// The row-per-warp GEMVs' launch loop over a call of m rows: for each pass (batch_tier),
// launch(std::integral_constant<int, tier>{}, first row, valid rows), which launches the
// kernel compiled for that tier; then the launch error, if any. "" or the first error.
template <class Launch>
std::string for_each_batch_tier(int64_t m, const Launch& launch) {
  for (int64_t i = 0; i < m;) {
    const int tier = batch_tier(m - i);
    const int valid = static_cast<int>(m - i < tier ? m - i : tier);
    switch (tier) {
      case 1: launch(std::integral_constant<int, 1>{}, i, valid); break;
      case 2: launch(std::integral_constant<int, 2>{}, i, valid); break;
      case 4: launch(std::integral_constant<int, 4>{}, i, valid); break;
      default: launch(std::integral_constant<int, 8>{}, i, valid); break;
    }
    const std::string e = error_text(cudaGetLastError());
    if (!e.empty()) return e;
    i += valid;
  }
  return {};
}

// The grid of the row-per-warp GEMVs: kWarpsPerBlock warps of kRowsPerWarp rows per block.
inline dim3 rows_grid(int64_t rows) {
  const int64_t rows_per_block = kWarpsPerBlock * kRowsPerWarp;
  return dim3(static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block));
}

}  // namespace fsq::cuda::detail
