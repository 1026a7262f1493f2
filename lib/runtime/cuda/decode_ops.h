// The CUDA backend's decode-step ops between the linears: what one decoder layer needs beside
// its quantized GEMVs (quant_gemv.h) for a batch of B sequences at one position. They mirror
// the CPU fast path (fast_decode.cpp): the residual stream stays f32, the linears read and
// write `act` values (f16 or bf16), RoPE uses the rotate_half layout, and the KV cache is
// f32 [B, kv_heads, capacity, head_dim].
//
// The position is read from device memory (`pos`, one int32), not passed by value, so that a
// decode step captured once in a CUDA graph replays at every position. Launchers take device
// pointers and a stream (a cudaStream_t; nullptr is the default stream), launch without
// waiting and return "" or the reason nothing was launched. Each op's host reference
// (decode_ops_reference.cpp, plain C++) is the specification the backend tests hold it to.
// No CUDA types here.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/cuda/quant_gemv.h"  // ActType

namespace fsq::cuda {

// h[b, :] = row ids[b] of the packed embedding w, dequantized as the CPU does:
// (q - z) * scale in f32, bit for bit (w holds device pointers; ids int32 [batch], device).
// The caller checks ids against w.rows on the host; a row out of range comes out as NaN.
std::string embed_uniform_rows(const cpu::UniformWeightsView& w, const int32_t* ids, int64_t batch, float* h,
                               void* stream = nullptr);

// h[b, :] = row ids[b] of the fp16 matrix `table` [rows, cols] as f32 (exact); NaN for an id
// out of range.
std::string embed_half_rows(const uint16_t* table, int64_t rows, int64_t cols, const int32_t* ids, int64_t batch,
                            float* h, void* stream = nullptr);

// y[b, :] = act(w * x[b, :] / sqrt(mean(x[b, :]^2) + eps)), x f32 [rows, cols].
std::string rms_norm_to_act(const float* x, const float* w, int64_t rows, int64_t cols, float eps, void* y, ActType act,
                            void* stream = nullptr);

// h[i] += float(y[i]) for i < count: a linear's output added to the residual stream.
std::string add_act(float* h, const void* y, int64_t count, ActType act, void* stream = nullptr);

// out[b, c] = act(silu(g) * u) with g = gate[b * stride + c], u = up[b * stride + c] (act
// values, the float product rounded once); out is [rows, cols] dense.
std::string silu_mul_act(const void* gate, const void* up, int64_t rows, int64_t cols, int64_t stride, void* out,
                         ActType act, void* stream = nullptr);

struct AttentionShape {
  int64_t batch = 0, heads = 0, kv_heads = 0, head_dim = 0;
  int64_t capacity = 0;  // positions the caches hold per sequence and KV head
};

// The largest capacity decode_attention takes: one block holds a head's logits in shared
// memory (32 KiB, inside the 48 KiB a block gets without opting in).
inline constexpr int64_t kMaxAttentionCapacity = 8192;

// Why `s` is out of the decode ops' range ("" when it is in): sizes not positive, heads not a
// multiple of kv_heads, head_dim odd or over 256, capacity over kMaxAttentionCapacity.
std::string attention_shape_problem(const AttentionShape& s);

// RoPE at position p = *pos on q [B, heads, D] and k [B, kv_heads, D] (act values; cos and
// sin are the model's tables [capacity, D], f32), then q_out f32 [B, heads, D] = rotated q,
// and the rotated k and v [B, kv_heads, D] written as f32 into the caches at slot p. The
// caller keeps p < capacity. q, k and v may be slices of one row-major buffer: row b of each
// starts at b * qkv_stride (elements).
std::string rope_append(const AttentionShape& s, const void* q, const void* k, const void* v, int64_t qkv_stride,
                        ActType act, const float* cos, const float* sin, const int32_t* pos, float* q_out,
                        float* k_cache, float* v_cache, void* stream = nullptr);

// out[b, h * D + d] = act(sum_j softmax_j(scale * q[b, h] . K[b, h / rep, j]) V[b, h / rep, j, d])
// over the keys j = 0 .. *pos (rep = heads / kv_heads). Sums in f32 in a fixed order, so
// results are the same on every run.
std::string decode_attention(const AttentionShape& s, const float* q, const float* k_cache, const float* v_cache,
                             const int32_t* pos, float scale, void* out, ActType act, void* stream = nullptr);

// Host references: the same ops on host memory, the position given directly, act values as
// uint16_t bits. Sums in double where the kernel sums in f32 with a fixed order, so the
// tests' tolerances come from the f32 arithmetic alone.
void embed_uniform_rows_reference(const cpu::UniformWeightsView& w, const int32_t* ids, int64_t batch, float* h);
void embed_half_rows_reference(const uint16_t* table, int64_t rows, int64_t cols, const int32_t* ids, int64_t batch,
                               float* h);
void rms_norm_to_act_reference(const float* x, const float* w, int64_t rows, int64_t cols, float eps, uint16_t* y,
                               ActType act);
void add_act_reference(float* h, const uint16_t* y, int64_t count, ActType act);
void silu_mul_act_reference(const uint16_t* gate, const uint16_t* up, int64_t rows, int64_t cols, int64_t stride,
                            uint16_t* out, ActType act);
void rope_append_reference(const AttentionShape& s, const uint16_t* q, const uint16_t* k, const uint16_t* v,
                           int64_t qkv_stride, ActType act, const float* cos, const float* sin, int64_t pos,
                           float* q_out, float* k_cache, float* v_cache);
void decode_attention_reference(const AttentionShape& s, const float* q, const float* k_cache, const float* v_cache,
                                int64_t pos, float scale, uint16_t* out, ActType act);

// An act value's bits from a float (round to nearest even) and back.
uint16_t to_act_bits(float v, ActType act);
float from_act_bits(uint16_t bits, ActType act);

}  // namespace fsq::cuda
