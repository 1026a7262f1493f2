// Integer-only non-linear operators after I-BERT (Kim et al., 2021, "I-BERT: Integer-only
// BERT Quantization"), for a LLaMA-family model: dyadic requantization, i-exp, i-softmax,
// integer square root, integer RMSNorm, i-GELU and an integer SiLU. Raw pointers and sizes
// only: no LibTorch here (DESIGN.md).
//
// Convention: a real value x is an integer code q times a real scale S, x = q * S. Scales are
// doubles fixed OFFLINE (calibration); the *_constants() builders turn them into integer
// constants once. At run time every op uses integer arithmetic only (int64 / __int128 adds,
// multiplies, shifts, integer division, comparisons): results are deterministic and
// bit-exact on any machine. Each op states the scale of its input and of its output.
//
// Approximations, formulas and their errors: max abs error vs the exact real function of the
// real input x = q * S, measured by tests/runtime/cpu/intonly_ops_test.cpp on dense grids
// (every code q in the range), the bound the test asserts in [brackets]:
//
//   dyadic      multiplier ~= m / 2^shift, 2^30 <= m < 2^31: relative error <= 2^-31
//               (measured 4.64e-10 on 1e5 multipliers in [2^-60, 2^30]) [2^-30].
//               requantize(acc, d) = round_half_away(acc m / 2^shift), exact [== llroundl];
//               within 1 of round(acc * multiplier) while |acc * multiplier| < 2^30 [1].
//   i-exp       x = -z ln2 + p, p in (-ln2, 0]; exp(p) ~= 0.3579966 (p + 1.349063)^2 + 0.3472189
//               (I-BERT's form, minimax constants: see kIExpA); exp(x) ~= that >> z. On
//               (-ln2, 0]: 1.2382e-3 at S = 1e-3, 1.2596e-3 at S = 4/127, 8/127, 1.2985e-3 at
//               S = 1e-4 [2e-3]. The polynomial's own error is 1.2383e-3 (equioscillating at
//               p = -ln2, -0.512, -0.166, 0); floor(b / S_e) lowers p + b by < S_e, which moves
//               the result by < 2 a (p + b) S_e <= 0.97 S_e (6e-5 at S = 1e-4). On [-10, 0]: max
//               relative error 2.80e-3 (S = 1e-4), 2.70e-3..2.73e-3 (S = 4/127, 8/127), 2.47e-3
//               (S = 1e-3, 2^-20) [3e-3]: the polynomial's 2.476e-3 plus floor(ln2 / S_e)
//               (< S_e per ln2 step) and the >> z truncation; the abs error stays <= 1.2985e-3
//               (it halves every ln2 step).
//   i-softmax   e_i = i-exp(q_i - max q); out_i = round(e_i 2^k / sum e), scale 2^-k.
//               |sum out 2^-k - 1| <= n 2^-(k+1) (rounding only: sum e_i / sum e is exactly 1)
//               [asserted]. |out_i 2^-k - softmax_i| <= 2 rho / (1 - rho) + 2^-(k+1), rho the
//               i-exp relative error over the row's range (rho <= 3e-3 on [-10, 0]: 6.03e-3 at
//               k = 15) [asserted]; measured 6.0e-4..6.7e-4 at k = 15, 2.37e-3 at k = 8, rows of
//               1..1000 logits in [-5, 5], S = 1e-3, 1e-4, 0.05, 2^-20.
//   isqrt       floor(sqrt(n)) by Newton's iteration from 2^ceil(bits/2): exact for every
//               uint64 and unsigned __int128 n [r^2 <= n < (r + 1)^2 in 128 bits, 2e6 + edge
//               cases].
//   i-RMSNorm   D = isqrt(floor(sum q^2 * 4^P / n) + round(eps / S^2 * 4^P)) ~= 2^P rms(x) / S;
//               out_i = round(q_i g_i 2^(P+F) / D), scale S_g 2^-F. D is off by < 1 + 1.5/(2D)
//               (two floors and the eps rounding), so |err_i| <= |y_i| 2/D + 0.5 S_g 2^-F
//               [asserted per element]. With the default P = 16, F = 8 the output rounding
//               dominates (0.9..1.0 of the bound); P = 8 on int8 inputs leaves D ~ 2e3..3e3,
//               i.e. ~1e-3 relative (0.2..0.3 of the bound).
//   i-GELU      erf(u) ~= L(u) = sgn(u) [-0.2575082 (min(|u|, 1.830621) - 1.830621)^2 + 1]
//               (I-BERT's form, minimax constants: see kIGeluA), GELU(x) ~= x/2 (1 + L(x /
//               sqrt2)). Max abs error on [-4, 4]: 1.4463e-2 at S = 1e-4, 1.4482e-2..1.4500e-2
//               at S = 4/127, 8/127, 1e-3, 2^-20 [0.018]: the fit's own error (1.4461e-2,
//               equioscillating at |x| = 0.409, 1.446, 2.456; the error is even in x) plus the
//               floor of b / S' (clip point and offset: measured < 4e-5), near |x| = 1.446.
//   i-SiLU      sigmoid(x) = 1/(1 + exp(-|x|)) (x >= 0), exp(x)/(1 + exp(x)) (x < 0), exp from
//               i-exp, integer division to scale 2^-K; SiLU(x) = x sigmoid(x). The sigmoid
//               error is <= the i-exp abs error at -|x| (<= 1.30e-3 2^-z, z = floor(|x|/ln2))
//               times d/de 1/(1+e) = 1/(1+e)^2, plus 2^-(K+1); the SiLU error is |x| times it,
//               peaking at |x| = 1.386 (= 2 ln2). Max abs error on [-8, 8] at K = 16:
//               5.24e-4..5.44e-4 at S = 1e-4, 1e-3, 8/127, 16/127 [6e-4].
//
// Internal scale of i-exp / i-GELU: the polynomial constants (floor(ln2/S), floor(b/S), ...)
// lose precision when S is coarse and overflow int64 when S is tiny, so the builders pick a
// power-of-two shift s with S_e = S * 2^-s inside [2^-20, 2^-13] for i-exp, [2^-14, 2^-10] for
// i-GELU (s = 0 for S in that range, which is exactly the paper's formulas): the op multiplies
// q by 2^s (s > 0) or shifts it right by -s (s < 0, a floor) before the polynomial. Valid
// input scales: [2^-30, 2^20].
#pragma once

#include <cstdint>

#include "runtime/cpu/kernel_status.h"

namespace fsq::cpu {

// ---- Dyadic requantization ----------------------------------------------------------------

// multiplier ~= m / 2^shift. For multipliers in [2^-64, 2^30]: 2^30 <= m < 2^31 and
// 0 <= shift <= 95, relative error <= 2^-31. A multiplier below 2^-64 gives {0, 0} (every
// int64 accumulator then requantizes to 0, as acc * multiplier would round to 0).
struct Dyadic {
  int32_t m = 0;
  int shift = 0;
};
// Throws fsq::Error for a negative, NaN or infinite multiplier or one above 2^30.
Dyadic dyadic_from_real(double multiplier);
// m / 2^shift as a double (exact).
double dyadic_value(Dyadic d);

// round(acc * m / 2^shift) computed exactly in 128 bits (any shift; a negative one multiplies
// by 2^-shift), ties rounded half AWAY from zero (2.5 -> 3, -2.5 -> -3), saturated to int64.
// The int8 kernels' activation quantizer (int8_kernels.h) rounds half to even instead; here
// ties only occur for exact dyadic halves, and away-from-zero is the usual integer epilogue.
int64_t requantize_wide(int64_t acc, Dyadic d);
// Saturating narrowings.
inline int8_t saturate_int8(int64_t v) { return static_cast<int8_t>(v < -128 ? -128 : v > 127 ? 127 : v); }
// Saturated to [-127, 127]: the activation codes an int8 GEMM multiplies (int8_kernels.h keeps
// codes off -128: the sign trick of its AVX2 and AVX-512BW kernels cannot negate -128, so a
// -128 there came out wrong on CPUs without VNNI).
inline int8_t saturate_code8(int64_t v) { return static_cast<int8_t>(v < -127 ? -127 : v > 127 ? 127 : v); }
inline int16_t saturate_int16(int64_t v) { return static_cast<int16_t>(v < -32768 ? -32768 : v > 32767 ? 32767 : v); }
inline int32_t saturate_int32(int64_t v) {
  return static_cast<int32_t>(v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v);
}
// requantize_wide saturated to int32.
inline int32_t requantize(int64_t acc, Dyadic d) { return saturate_int32(requantize_wide(acc, d)); }

// out[i] = saturate(requantize_wide(acc[i], d)) for i < n (n >= 0; pointers non-null when
// n > 0). Output scale = input scale / multiplier.
KernelStatus requantize_array(const int32_t* acc, int64_t n, Dyadic d, int8_t* out);
KernelStatus requantize_array(const int32_t* acc, int64_t n, Dyadic d, int16_t* out);
KernelStatus requantize_array(const int32_t* acc, int64_t n, Dyadic d, int32_t* out);
KernelStatus requantize_array(const int64_t* acc, int64_t n, Dyadic d, int8_t* out);
KernelStatus requantize_array(const int64_t* acc, int64_t n, Dyadic d, int16_t* out);
KernelStatus requantize_array(const int64_t* acc, int64_t n, Dyadic d, int32_t* out);
// Per output channel (a W8A8 GEMM epilogue: acc[i, j] has scale S_x S_w[j], multiplier[j] =
// S_x S_w[j] / S_out): out[i * out_stride + j] = saturate(requantize_wide(acc[i * acc_stride
// + j], d[j])) for i < m, j < cols. m, cols >= 0, strides >= cols, pointers non-null when
// m * cols > 0.
KernelStatus requantize_per_channel(const int32_t* acc, int64_t m, int64_t cols, int64_t acc_stride, const Dyadic* d,
                                    int8_t* out, int64_t out_stride);
KernelStatus requantize_per_channel(const int32_t* acc, int64_t m, int64_t cols, int64_t acc_stride, const Dyadic* d,
                                    int32_t* out, int64_t out_stride);

// ---- per-token power-of-two int8 scales -----------------------------------------------------

// A token's int8 codes at its own power-of-two scale, chosen in integers: x holds one
// token's n >= 1 int32 codes at a fine scale S_f; k = the smallest shift >= 0 with
// round_half_away(max|x| / 2^k) <= 127; out[i] = round_half_away(x[i] / 2^k), so the codes
// have scale S_f 2^k and |out| <= 127. Returns k (0..25), or -1 on bad arguments (n < 1,
// null pointers). A static per-tensor scale must cover the largest token of the calibration
// set, which leaves the typical token a few codes wide when activations are heavy-tailed
// across tokens (down_proj's inputs); this keeps every token at 64..127 codes of full scale,
// at most 2x the step of an exact per-token absmax scale. The GEMM's int32 accumulator of
// such a row then carries scale S_f 2^k S_w: shifting it left by k restores S_f S_w.
int quantize_token_pow2(const int32_t* x, int64_t n, int8_t* out);

// ---- i-exp --------------------------------------------------------------------------------

// I-BERT's second-order polynomial for exp on (-ln2, 0]: a (p + b)^2 + c. The constants are a
// minimax refit of that form (the degree-2 minimax polynomial of exp on [-ln2, 0], Remez
// exchange, rounded to 7 digits): max abs error 1.2383e-3. The paper's least-squares
// constants (a, b, c) = (0.3585, 1.353, 0.344) leave 2.128e-3, above the 2e-3 this op is held
// to. Reproduce with scripts/fit_intonly_constants.py.
inline constexpr double kIExpA = 0.3579966, kIExpB = 1.349063, kIExpC = 0.3472189;

// Offline constants for i-exp of codes with scale S (see "Internal scale" above):
struct IExpConstants {
  double in_scale = 0;   // S
  int in_shift = 0;      // s: q_e = q * 2^s (s >= 0) or q >> -s (s < 0); S_e = S 2^-s in [2^-20, 2^-13]
  int64_t q_ln2 = 0;     // floor(ln2 / S_e)
  int64_t q_b = 0;       // floor(b / S_e)
  int64_t q_c = 0;       // floor(c / (a S_e^2))
  double out_scale = 0;  // a S_e^2: the scale of iexp's result
};
// Throws fsq::Error unless 2^-30 <= in_scale <= 2^20.
IExpConstants iexp_constants(double in_scale);

// exp(q * S) for q <= 0 (q > 0 is treated as 0), as a code of scale c.out_scale:
//   z = floor(-q_e / q_ln2), q_p = q_e + z q_ln2 in (-q_ln2, 0],
//   result = ((q_p + q_b)^2 + q_c) >> z   (0 once z >= 63).
// The result is in [0, 2^42) and iexp(0) = q_b^2 + q_c ~= 0.9988 / out_scale.
int64_t iexp(int64_t q, const IExpConstants& c);

// ---- i-softmax ----------------------------------------------------------------------------

// Softmax of one row of n logits q (scale c.in_scale): e_i = iexp(q_i - max_j q_j),
// out_i = round_half_up(e_i 2^k / sum_j e_j), output scale 2^-k. 0 <= k <= 30,
// 1 <= n < 2^20. The outputs sum to 2^k within n/2.
KernelStatus isoftmax_row(const int32_t* q, int64_t n, const IExpConstants& c, int k, int32_t* out);
// The same with k = 8 (UINT8: 1.0 saturates to 255) and k = 15 (INT16: 1.0 saturates to 32767).
inline constexpr int kSoftmaxU8FracBits = 8, kSoftmaxI16FracBits = 15;
KernelStatus isoftmax_row_u8(const int32_t* q, int64_t n, const IExpConstants& c, uint8_t* out);
KernelStatus isoftmax_row_i16(const int32_t* q, int64_t n, const IExpConstants& c, int16_t* out);

// ---- Integer square root ------------------------------------------------------------------

// floor(sqrt(n)), exact for every n: Newton x <- (x + n / x) / 2 from x0 = 2^ceil(bits(n)/2)
// (>= sqrt(n)) while it decreases.
uint64_t isqrt_u64(uint64_t n);
uint64_t isqrt_u128(unsigned __int128 n);

// ---- Integer RMSNorm ----------------------------------------------------------------------

// y_i = x_i / sqrt(mean(x^2) + eps) * g_i with x = q S (per-tensor S), g = q_g S_g (int16
// gain codes, per-tensor S_g, quantized offline by quantize_gain_int16). S cancels except in
// eps: with P fraction bits,
//   D     = isqrt(floor(sum_i q_i^2 * 4^P / n) + q_eps) ~= 2^P sqrt(mean(q^2) + eps / S^2),
//   q_eps = round(eps / S^2 * 4^P)                              (offline),
//   out_i = round_half_away(q_i q_g,i 2^(P+F) / D)              scale S_g 2^-F,
// saturated to int32 (|x_i| / rms <= sqrt(n), so F < 16 - log2(sqrt(n)) never saturates with
// |q_g| <= 32767: F = 8 is safe up to n = 2^15).
// D == 0 (all-zero row, eps = 0) gives zeros. Sums are exact in 128 bits.
struct IRmsNormConstants {
  int frac_bits = 16;           // P, 0..24
  int out_frac_bits = 8;        // F, 0..16
  unsigned __int128 q_eps = 0;  // < 2^100, so D < 2^56
};
// Throws fsq::Error for a non-positive / non-finite in_scale, a negative eps, P or F out of
// range, or q_eps >= 2^100.
IRmsNormConstants irmsnorm_constants(double in_scale, double eps, int frac_bits = 16, int out_frac_bits = 8);
// Offline: S_g = max |g| / 32767 (1 when g is all zero), q_g = round(g / S_g). Returns S_g.
double quantize_gain_int16(const float* g, int64_t n, int16_t* q_g);
// n >= 1; pointers non-null.
KernelStatus irmsnorm_row(const int32_t* q, int64_t n, const int16_t* q_g, const IRmsNormConstants& c, int32_t* out);
KernelStatus irmsnorm_row(const int8_t* q, int64_t n, const int16_t* q_g, const IRmsNormConstants& c, int32_t* out);
// irmsnorm_row then requantize to int8 codes in [-127, 127] (saturate_code8: they feed the
// int8 GEMMs): out scale = S_g 2^-F / multiplier(to_int8).
KernelStatus irmsnorm_row_int8(const int32_t* q, int64_t n, const int16_t* q_g, const IRmsNormConstants& c,
                               Dyadic to_int8, int8_t* out);

// ---- i-GELU -------------------------------------------------------------------------------

// I-BERT's erf polynomial L(u) = sgn(u) [a (min(|u|, -b) + b)^2 + 1]. The constants are a
// minimax refit of that form on the error of GELU(x) ~= x/2 (1 + L(x / sqrt2)) over
// [-4, 4] (not of erf alone; rounded to 7 digits): max abs error 1.4461e-2. The paper's
// least-squares constants (a, b) = (-0.2888, -1.769) leave 1.8152e-2, above the 0.018 this
// op is held to. |a| b^2 = 0.863 < 1 (so q_b^2 < q_one below). Reproduce with
// scripts/fit_intonly_constants.py.
inline constexpr double kIGeluA = -0.2575082, kIGeluB = -1.830621;

// Offline constants for i-GELU of codes with scale S. The erf part runs on q_e (shifted as
// for i-exp) with scale S' = S_e / sqrt2 (u = x / sqrt2):
struct IGeluConstants {
  double in_scale = 0;   // S
  int in_shift = 0;      // s, S_e = S 2^-s in [2^-14, 2^-10]
  int64_t q_b = 0;       // floor(b / S') < 0; |u| is clipped at -q_b
  int64_t q_one = 0;     // floor(1 / (|a| S'^2)): 1 in the erf scale |a| S'^2
  double out_scale = 0;  // S |a| S'^2 / 2
};
// Throws fsq::Error unless 2^-30 <= in_scale <= 2^20.
IGeluConstants igelu_constants(double in_scale);
// t = min(|q_e|, -q_b) + q_b (<= 0), E = q_one - t^2 (|erf| in scale |a| S'^2),
// result = q (2 q_one - t^2) for q >= 0, q t^2 for q < 0 (= q (q_one + sgn(q) E)),
// scale c.out_scale. Needs |q| <= 2^31 (q_one < 2^30.96 keeps |result| < 2^63).
int64_t igelu(int64_t q, const IGeluConstants& c);
KernelStatus igelu_array(const int32_t* q, int64_t n, const IGeluConstants& c, int64_t* out);

// ---- Integer SiLU -------------------------------------------------------------------------

// SiLU(x) = x sigmoid(x) for LLaMA's gated MLP, sigmoid from i-exp:
//   e = iexp(-|q|) (scale a S_e^2), q_one = round(1 / (a S_e^2)),
//   sigmoid = round_half_up(2^K q_one / (q_one + e))  (q >= 0)
//             round_half_up(2^K e / (q_one + e))      (q < 0),  scale 2^-K,
//   SiLU    = q * sigmoid, scale S 2^-K.
struct ISiluConstants {
  IExpConstants exp;
  int64_t q_one = 0;
  int sigmoid_frac_bits = 16;  // K, 1..20
  double out_scale = 0;        // S 2^-K
};
// Throws fsq::Error unless 2^-30 <= in_scale <= 2^20 and 1 <= K <= 20.
ISiluConstants isilu_constants(double in_scale, int sigmoid_frac_bits = 16);
// sigmoid(q S) in scale 2^-K, in [0, 2^K].
int64_t isigmoid(int64_t q, const ISiluConstants& c);
// SiLU(q S) in scale c.out_scale (|result| <= |q| 2^K: needs |q| < 2^(63 - K)).
int64_t isilu(int64_t q, const ISiluConstants& c);
KernelStatus isilu_array(const int32_t* q, int64_t n, const ISiluConstants& c, int64_t* out);

}  // namespace fsq::cpu
