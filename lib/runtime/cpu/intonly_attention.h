// Integer-only rotary embedding and causal attention for the I-BERT decoder layer
// (runtime/intonly_layer.h). Raw pointers and sizes only: no LibTorch (DESIGN.md). Every
// result is a function of its inputs alone (each output element is computed by one thread
// from the same integer operations), so it is bit-identical for any thread count.
#pragma once

#include <cstdint>

#include "runtime/cpu/intonly_ops.h"

namespace fsq::cpu {

// Fixed-point rotary tables: round(cos * 2^kRopeFracBits), round(sin * 2^kRopeFracBits),
// HF rotate_half layout [positions, head_dim]. Q14: |table| <= 2^14, so the products below
// stay far inside int64, and the table error 2^-15 is 0.2 % of one int8 step or less.
inline constexpr int kRopeFracBits = 14;

// RoPE of one window, in integers. x: [tokens, heads, head_dim] int32 codes of scale S (the
// projection requantized to S = S_out 2^-extra_bits); token t sits at position
// first_position + t of the tables. With half = head_dim / 2, for i < half:
//   r_i        = x_i C_i - x_{i+half} S_i,   r_{i+half} = x_{i+half} C_{i+half} + x_i S_{i+half}
//   out        = clamp(round_half_away(r / 2^(kRopeFracBits + extra_bits)), -code_max, code_max)
// in scale S_out. head_dim even and >= 2, 0 <= extra_bits <= 30, |x| < 2^31,
// 1 <= code_max <= 32767.
KernelStatus irope(const int32_t* x, int64_t tokens, int64_t heads, int64_t head_dim, const int32_t* cos_q,
                   const int32_t* sin_q, int64_t first_position, int extra_bits, int32_t code_max, int16_t* out);

// Query/key codes of the integer attention: 12 bits (|code| <= 2047) in int16. int8 keys were
// the integer path's largest error (keys have outlier channels: on stories260K a per-tensor
// int8 k alone moved the mean KL vs fp from 0.0057 to 0.0155); 2047^2 head_dim < 2^31 keeps
// the scores exact in int32 up to head_dim 512.
inline constexpr int32_t kQkCodeMax = 2047;
inline constexpr int64_t kMaxQkHeadDim = 512;

struct IAttentionShape {
  int64_t batch = 0, tokens = 0, heads = 0, kv_heads = 0, head_dim = 0;
};

// Causal grouped-query attention of whole windows (positions 0 .. tokens-1), in integers.
// q: [batch, tokens, heads, head_dim] codes |q| <= kQkCodeMax (scale S_q), k: [batch, tokens,
// kv_heads, head_dim] likewise (S_k), v: the same shape, int8 (S_v); head_dim <= kMaxQkHeadDim; query head h reads kv head h / (heads / kv_heads). For each query
// row t:  s_j = sum_d q_d k_{j,d} (int32, scale S_q S_k; exp.in_scale must be S_q S_k /
// sqrt(head_dim): the 1/sqrt(d) lives in that scale), j <= t (the causal mask: later keys are
// never read); p = isoftmax_row(s, t + 1, exp, prob_frac_bits) (scale 2^-k); out_d =
// saturate_code8(requantize(sum_j p_j v_{j,d}, to_out)) (in [-127, 127]: o_proj's int8 GEMM
// reads it) with to_out ~= 2^-k S_v / S_out.
// out: [batch, tokens, heads, head_dim]. 1 <= prob_frac_bits <= 16 (sum_j p_j v_j then fits
// in int32). Parallel over (batch, head, row) with OpenMP.
KernelStatus iattention(const int16_t* q, const int16_t* k, const int8_t* v, const IAttentionShape& shape,
                        const IExpConstants& exp, int prob_frac_bits, Dyadic to_out, int8_t* out);
// The same with out_d = saturate_int32(requantize(...)): for a fine output scale that
// quantize_token_pow2 then narrows per token.
KernelStatus iattention(const int16_t* q, const int16_t* k, const int8_t* v, const IAttentionShape& shape,
                        const IExpConstants& exp, int prob_frac_bits, Dyadic to_out, int32_t* out);

}  // namespace fsq::cpu
