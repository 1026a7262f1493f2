// Kernels of the CUDA decode-step ops (decode_ops.h). Sums run in f32 in a fixed order (warp
// xor trees, then the warps' partials in warp order), so every run gives the same bits.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "runtime/cuda/decode_ops.h"
#include "runtime/cuda/gemv_common.cuh"

namespace fsq::cuda {
namespace {

using detail::ActTraits;

constexpr int kNormThreads = 256;
constexpr int kElementThreads = 256;
constexpr int kMaxElementBlocks = 4096;
constexpr int kRopeThreads = 128;       // head_dim / 2 <= 128 pairs per head
constexpr int kAttentionThreads = 128;  // 4 warps: a warp per key for the logits

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Sum (or max) over the block, the same value returned to every thread. scratch: 32 floats of
// shared memory, free again when this returns. blockDim.x is a multiple of 32.
template <bool kMax>
__device__ float block_reduce(float v, float* scratch) {
  v = kMax ? warp_max(v) : detail::warp_sum(v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const float identity = kMax ? -INFINITY : 0.f;
  float total = lane < warps ? scratch[lane] : identity;
  total = kMax ? warp_max(total) : detail::warp_sum(total);
  __syncthreads();
  return total;
}

// One block per sequence, threads over the row's columns.
__global__ void embed_uniform_rows_kernel(cpu::UniformWeightsView w, const int32_t* __restrict__ ids,
                                          float* __restrict__ h) {
  const int64_t id = ids[blockIdx.x], groups = w.cols / w.group_cols;
  float* out = h + static_cast<int64_t>(blockIdx.x) * w.cols;
  const bool valid = id >= 0 && id < w.rows;
  const uint32_t* row = w.words + (valid ? id : 0) * w.words_per_row;
  const uint32_t mask = (1u << w.bits) - 1;
  for (int64_t k = threadIdx.x; k < w.cols; k += blockDim.x) {
    if (!valid) {
      out[k] = __int_as_float(0x7fc00000);  // NaN
      continue;
    }
    const int64_t bit = k * w.bits, word = bit / 32, off = bit % 32;
    uint64_t pair = row[word];
    if (off + w.bits > 32) pair |= static_cast<uint64_t>(row[word + 1]) << 32;
    const auto q = static_cast<int32_t>((pair >> off) & mask);
    const int64_t g = id * groups + k / w.group_cols;
    const int32_t z = w.zeros != nullptr ? w.zeros[g] : 1 << (w.bits - 1);
    out[k] = __fmul_rn(static_cast<float>(q - z), detail::f16_bits_to_float(w.scales[g]));
  }
}

__global__ void embed_half_rows_kernel(const __half* __restrict__ table, int64_t rows, int64_t cols,
                                       const int32_t* __restrict__ ids, float* __restrict__ h) {
  const int64_t id = ids[blockIdx.x];
  float* out = h + static_cast<int64_t>(blockIdx.x) * cols;
  const bool valid = id >= 0 && id < rows;
  for (int64_t k = threadIdx.x; k < cols; k += blockDim.x)
    out[k] = valid ? __half2float(table[id * cols + k]) : __int_as_float(0x7fc00000);
}

template <class Act>
__global__ void rms_norm_act_kernel(const float* __restrict__ x, const float* __restrict__ w, int64_t cols, float eps,
                                    Act* __restrict__ y) {
  __shared__ float scratch[32];
  const float* xr = x + static_cast<int64_t>(blockIdx.x) * cols;
  Act* yr = y + static_cast<int64_t>(blockIdx.x) * cols;
  float ss = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) ss = fmaf(xr[c], xr[c], ss);
  const float inv = rsqrtf(block_reduce<false>(ss, scratch) / static_cast<float>(cols) + eps);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = ActTraits<Act>::from_float(w[c] * (xr[c] * inv));
}

template <class Act>
__global__ void add_act_kernel(float* __restrict__ h, const Act* __restrict__ y, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    h[i] += ActTraits<Act>::to_float(y + i);
}

template <class Act>
__global__ void silu_mul_act_kernel(const Act* __restrict__ gate, const Act* __restrict__ up, int64_t rows,
                                    int64_t cols, int64_t stride, Act* __restrict__ out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < rows * cols;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t at = i / cols * stride + i % cols;
    const float g = ActTraits<Act>::to_float(gate + at), u = ActTraits<Act>::to_float(up + at);
    out[i] = ActTraits<Act>::from_float(g / (1.f + expf(-g)) * u);
  }
}

// One block per head of one sequence: the batch's query heads first, then its KV heads, whose
// block also copies the head's values into the cache.
template <class Act>
__global__ void rope_append_kernel(AttentionShape s, const Act* __restrict__ q, const Act* __restrict__ k,
                                   const Act* __restrict__ v, int64_t stride, const float* __restrict__ cos,
                                   const float* __restrict__ sin, const int32_t* __restrict__ pos,
                                   float* __restrict__ q_out, float* __restrict__ k_cache,
                                   float* __restrict__ v_cache) {
  const int64_t p = *pos, d = s.head_dim, half = d / 2;
  const int64_t per_sequence = s.heads + s.kv_heads;
  const int64_t b = blockIdx.x / per_sequence, h = blockIdx.x % per_sequence;
  const float* c = cos + p * d;
  const float* sn = sin + p * d;
  const bool query = h < s.heads;
  const int64_t kv_head = h - s.heads;
  const Act* x = query ? q + b * stride + h * d : k + b * stride + kv_head * d;
  const int64_t slot = ((b * s.kv_heads + kv_head) * s.capacity + p) * d;
  float* dst = query ? q_out + (b * s.heads + h) * d : k_cache + slot;
  for (int64_t i = threadIdx.x; i < half; i += blockDim.x) {
    const float lo = ActTraits<Act>::to_float(x + i), hi = ActTraits<Act>::to_float(x + i + half);
    dst[i] = lo * c[i] - hi * sn[i];
    dst[i + half] = hi * c[i + half] + lo * sn[i + half];
  }
  if (query) return;
  const Act* vx = v + b * stride + kv_head * d;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) v_cache[slot + i] = ActTraits<Act>::to_float(vx + i);
}

// One block per query head of one sequence: a warp per key for the logits (lanes over the
// head's dimensions), the softmax over the block, then a thread per dimension sums the values
// in key order. The logits live in dynamic shared memory (capacity floats).
template <class Act>
__global__ void decode_attention_kernel(AttentionShape s, const float* __restrict__ q,
                                        const float* __restrict__ k_cache, const float* __restrict__ v_cache,
                                        const int32_t* __restrict__ pos, float scale, Act* __restrict__ out) {
  extern __shared__ float weights[];
  __shared__ float scratch[32];
  const int64_t keys = static_cast<int64_t>(*pos) + 1, d = s.head_dim, rep = s.heads / s.kv_heads;
  const int64_t b = blockIdx.x / s.heads, h = blockIdx.x % s.heads;
  const float* qh = q + (b * s.heads + h) * d;
  const int64_t kv = (b * s.kv_heads + h / rep) * s.capacity * d;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  for (int64_t j = warp; j < keys; j += warps) {
    const float* kj = k_cache + kv + j * d;
    float dot = 0.f;
    for (int64_t i = lane; i < d; i += 32) dot = fmaf(qh[i], kj[i], dot);
    dot = detail::warp_sum(dot);
    if (lane == 0) weights[j] = dot * scale;
  }
  __syncthreads();
  float top = -INFINITY;
  for (int64_t j = threadIdx.x; j < keys; j += blockDim.x) top = fmaxf(top, weights[j]);
  top = block_reduce<true>(top, scratch);
  float sum = 0.f;
  for (int64_t j = threadIdx.x; j < keys; j += blockDim.x) {
    const float e = expf(weights[j] - top);
    weights[j] = e;
    sum += e;
  }
  const float inv = 1.f / block_reduce<false>(sum, scratch);  // its barrier publishes the weights
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    float acc = 0.f;
    for (int64_t j = 0; j < keys; ++j) acc = fmaf(weights[j], v_cache[kv + j * d + i], acc);
    out[(b * s.heads + h) * d + i] = ActTraits<Act>::from_float(acc * inv);
  }
}

int element_blocks(int64_t count) {
  return static_cast<int>(std::min<int64_t>((count + kElementThreads - 1) / kElementThreads, kMaxElementBlocks));
}

std::string launched(const char* op) {
  const std::string e = detail::error_text(cudaGetLastError());
  return e.empty() ? e : std::string(op) + ": " + e;
}

}  // namespace

std::string embed_uniform_rows(const cpu::UniformWeightsView& w, const int32_t* ids, int64_t batch, float* h,
                               void* stream) {
  if (cpu::check_uniform_view(w) != cpu::KernelStatus::Ok) return "embed_uniform_rows: inconsistent weight view";
  if (ids == nullptr || h == nullptr) return "embed_uniform_rows: null pointer";
  if (batch < 1 || batch > INT32_MAX) return "embed_uniform_rows: batch must be positive";
  embed_uniform_rows_kernel<<<static_cast<unsigned>(batch), kNormThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      w, ids, h);
  return launched("embed_uniform_rows");
}

std::string embed_half_rows(const uint16_t* table, int64_t rows, int64_t cols, const int32_t* ids, int64_t batch,
                            float* h, void* stream) {
  if (table == nullptr || ids == nullptr || h == nullptr) return "embed_half_rows: null pointer";
  if (rows < 1 || cols < 1 || batch < 1 || batch > INT32_MAX) return "embed_half_rows: sizes must be positive";
  embed_half_rows_kernel<<<static_cast<unsigned>(batch), kNormThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      reinterpret_cast<const __half*>(table), rows, cols, ids, h);
  return launched("embed_half_rows");
}

std::string rms_norm_to_act(const float* x, const float* w, int64_t rows, int64_t cols, float eps, void* y, ActType act,
                            void* stream) {
  if (x == nullptr || w == nullptr || y == nullptr) return "rms_norm_to_act: null pointer";
  if (rows < 1 || rows > INT32_MAX || cols < 1) return "rms_norm_to_act: rows and cols must be positive";
  auto st = static_cast<cudaStream_t>(stream);
  const auto grid = static_cast<unsigned>(rows);
  if (act == ActType::F16)
    rms_norm_act_kernel<<<grid, kNormThreads, 0, st>>>(x, w, cols, eps, static_cast<__half*>(y));
  else
    rms_norm_act_kernel<<<grid, kNormThreads, 0, st>>>(x, w, cols, eps, static_cast<__nv_bfloat16*>(y));
  return launched("rms_norm_to_act");
}

std::string add_act(float* h, const void* y, int64_t count, ActType act, void* stream) {
  if (h == nullptr || y == nullptr) return "add_act: null pointer";
  if (count < 1) return "add_act: count must be positive";
  auto st = static_cast<cudaStream_t>(stream);
  if (act == ActType::F16)
    add_act_kernel<<<element_blocks(count), kElementThreads, 0, st>>>(h, static_cast<const __half*>(y), count);
  else
    add_act_kernel<<<element_blocks(count), kElementThreads, 0, st>>>(h, static_cast<const __nv_bfloat16*>(y), count);
  return launched("add_act");
}

std::string silu_mul_act(const void* gate, const void* up, int64_t rows, int64_t cols, int64_t stride, void* out,
                         ActType act, void* stream) {
  if (gate == nullptr || up == nullptr || out == nullptr) return "silu_mul_act: null pointer";
  if (rows < 1 || cols < 1 || stride < cols) return "silu_mul_act: rows and cols must be positive, stride >= cols";
  auto st = static_cast<cudaStream_t>(stream);
  const int blocks = element_blocks(rows * cols);
  if (act == ActType::F16)
    silu_mul_act_kernel<<<blocks, kElementThreads, 0, st>>>(static_cast<const __half*>(gate),
                                                             static_cast<const __half*>(up), rows, cols, stride,
                                                             static_cast<__half*>(out));
  else
    silu_mul_act_kernel<<<blocks, kElementThreads, 0, st>>>(static_cast<const __nv_bfloat16*>(gate),
                                                             static_cast<const __nv_bfloat16*>(up), rows, cols, stride,
                                                             static_cast<__nv_bfloat16*>(out));
  return launched("silu_mul_act");
}

std::string rope_append(const AttentionShape& s, const void* q, const void* k, const void* v, int64_t qkv_stride,
                        ActType act, const float* cos, const float* sin, const int32_t* pos, float* q_out,
                        float* k_cache, float* v_cache, void* stream) {
  if (std::string why = attention_shape_problem(s); !why.empty()) return "rope_append: " + why;
  if (!q || !k || !v || !cos || !sin || !pos || !q_out || !k_cache || !v_cache) return "rope_append: null pointer";
  if (s.batch > 1 && qkv_stride < s.heads * s.head_dim) return "rope_append: qkv_stride shorter than a row of q";
  auto st = static_cast<cudaStream_t>(stream);
  const auto grid = static_cast<unsigned>(s.batch * (s.heads + s.kv_heads));
  if (act == ActType::F16)
    rope_append_kernel<<<grid, kRopeThreads, 0, st>>>(s, static_cast<const __half*>(q), static_cast<const __half*>(k),
                                                      static_cast<const __half*>(v), qkv_stride, cos, sin, pos, q_out,
                                                      k_cache, v_cache);
  else
    rope_append_kernel<<<grid, kRopeThreads, 0, st>>>(
        s, static_cast<const __nv_bfloat16*>(q), static_cast<const __nv_bfloat16*>(k),
        static_cast<const __nv_bfloat16*>(v), qkv_stride, cos, sin, pos, q_out, k_cache, v_cache);
  return launched("rope_append");
}

std::string decode_attention(const AttentionShape& s, const float* q, const float* k_cache, const float* v_cache,
                             const int32_t* pos, float scale, void* out, ActType act, void* stream) {
  if (std::string why = attention_shape_problem(s); !why.empty()) return "decode_attention: " + why;
  if (!q || !k_cache || !v_cache || !pos || !out) return "decode_attention: null pointer";
  auto st = static_cast<cudaStream_t>(stream);
  const auto grid = static_cast<unsigned>(s.batch * s.heads);
  const size_t shared = static_cast<size_t>(s.capacity) * sizeof(float);
  if (act == ActType::F16)
    decode_attention_kernel<<<grid, kAttentionThreads, shared, st>>>(s, q, k_cache, v_cache, pos, scale,
                                                                      static_cast<__half*>(out));
  else
    decode_attention_kernel<<<grid, kAttentionThreads, shared, st>>>(s, q, k_cache, v_cache, pos, scale,
                                                                      static_cast<__nv_bfloat16*>(out));
  return launched("decode_attention");
}

}  // namespace fsq::cuda
