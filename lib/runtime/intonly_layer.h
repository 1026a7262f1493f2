// The integer-only (I-BERT) LLaMA decoder layer: every operation of the layer runs on
// integer codes with static scales fixed when the model loads (from the w8a8static linears'
// input scales and the calibrated ranges of formats/packed_checkpoint.h IntonlyRange):
//
//   residual h      int32 codes at the layer's residual scale S_r = max(ranges residual in,
//                   mid, out) / 2^kResidualBits (headroom 2^(31 - kResidualBits) = 512x)
//   RMSNorm         cpu::irmsnorm_row_int8: gain folded in as int16 codes, output int8 at the
//                   next linears' static input scale
//   q/k/v/o/gate/   cpu::int8_gemm_int32 (int8 x int8 -> exact int32), a bias added as int32
//   up/down         codes of the accumulator scale, then dyadic requantization per output
//                   channel to the next operation's scale
//   RoPE            q, k requantized to int32 at S_q 2^-kRopeExtraBits (S_q = range /
//                   cpu::kQkCodeMax), Q14 cos/sin tables, integer multiply + rounding shift to
//                   12-bit codes (int16) at S_q: int8 keys were the path's largest error
//   attention       12-bit q.k -> exact int32 scores (1/sqrt(d) folded into the i-exp scale),
//                   causal rows, i-softmax to Q15 probabilities, probs x int8 v -> int64,
//                   requantized to o_proj's input (below)
//   SiLU, product   gate, up requantized to int16-range codes at range / 2^kMlpCodeBits,
//                   integer SiLU (sigmoid Q16), int64 product with up, requantized to
//                   down_proj's input (below)
//   o/down inputs   IntonlyInputs::Token (the default): requantized to int32 at a fine scale
//                   S_f (the static input scale / 2^kTokenFineBits, or fewer bits where the
//                   multiplier would pass 2^30), then each token to int8 at its own
//                   power-of-two scale S_f 2^k (cpu::quantize_token_pow2: an integer max and
//                   shift); the int32 accumulators are shifted left by k before the epilogue.
//                   These inputs are heavy-tailed across tokens: a static scale that covers the
//                   largest calibration token leaves typical tokens a few codes wide (SmolLM2:
//                   mean KL vs fp 0.18 static, 0.02 per token). Static: int8 at the static
//                   input scale, as I-BERT.
//   residual adds   o / down outputs requantized per channel to S_r, added in int64 and
//                   saturated to int32
//
// Only the embedding lookup (then quantized to layer 0's S_r) and the final norm + lm_head
// stay in floating point (runtime/intonly_model.h). The arithmetic is exact integer math:
// the same codes on any machine and thread count. Errors of the operators: cpu/intonly_ops.h.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/cpu/int8_kernels.h"
#include "runtime/cpu/intonly_ops.h"

namespace fsq {

struct DecoderLayer;
struct ModelConfig;

inline constexpr int kResidualBits = 22;     // residual codes: range -> 2^22
inline constexpr int kRopeExtraBits = 8;     // q/k before RoPE: 8 more bits than the RoPE result
inline constexpr int kMlpCodeBits = 13;      // gate/up codes: range -> 2^13, saturated at int16
inline constexpr int kSigmoidFracBits = 16;  // integer SiLU's sigmoid, Q16
inline constexpr int kProbFracBits = cpu::kSoftmaxI16FracBits;  // softmax probabilities, Q15
inline constexpr int kNormFracBits = 16, kNormOutFracBits = 8;  // i-RMSNorm P, F
inline constexpr int kTokenFineBits = 20;  // token-scaled inputs: fine scale = static / 2^20

// How the o_proj and down_proj inputs are quantized (see above).
enum class IntonlyInputs { Static, Token };

// Fixed-point rotary tables for positions [0, positions): [positions, head_dim] each.
struct FixedRope {
  std::vector<int32_t> cos, sin;
  int64_t positions = 0, head_dim = 0;
};

// One linear as the integer path runs it: the w8a8static weights and the requantization of
// its int32 accumulators (scale in_scale * w_scale[j]) to the next operation's scale.
struct IntonlyLinear {
  cpu::Int8PreparedView w;
  cpu::CpuIsa isa = cpu::CpuIsa::Scalar;
  double in_scale = 0;
  std::vector<double> w_scales;   // [rows]
  std::vector<int64_t> bias_acc;  // [rows] round(bias / (in_scale w_scale)), empty without bias
  std::vector<cpu::Dyadic> to_out;  // [rows] in_scale w_scale[j] / out_scale
  int64_t rows = 0, cols = 0;
};

class IntonlyLayer {
 public:
  // layer: its seven linears must be w8a8static Int8Linears (q/k/v and gate/up sharing their
  // input scale); ranges: [kIntonlyRangeCount]. Throws fsq::Error otherwise.
  IntonlyLayer(const DecoderLayer& layer, const ModelConfig& cfg, const float* ranges, int64_t index,
               IntonlyInputs inputs = IntonlyInputs::Token);

  double residual_scale() const { return s_res_; }
  // h: [batch * tokens, hidden] int32 codes at residual_scale(), whole windows at positions
  // 0 .. tokens-1 (rope covers them); updated in place to the layer's output.
  void forward(int32_t* h, int64_t batch, int64_t tokens, const FixedRope& rope) const;

 private:
  void norm(const int32_t* h, int64_t m, const std::vector<int16_t>& gain, cpu::Dyadic to_int8, int8_t* out) const;
  // o_proj's (down_proj's) int8 input from the attention output (the SiLU x up product) and,
  // for token-scaled inputs, each row's shift (empty when static).
  std::vector<int8_t> attention_output(const int16_t* q, const int16_t* k, const int8_t* v, int64_t batch,
                                       int64_t tokens, std::vector<int>& shifts) const;
  std::vector<int8_t> mlp_product(const std::vector<int32_t>& g, const std::vector<int32_t>& u, int64_t m,
                                  std::vector<int>& shifts) const;

  IntonlyInputs inputs_ = IntonlyInputs::Token;

  int64_t index_ = 0, hidden_ = 0, heads_ = 0, kv_heads_ = 0, head_dim_ = 0, inter_ = 0;
  double s_res_ = 0;
  cpu::IRmsNormConstants norm_c_;
  std::vector<int16_t> g_in_, g_post_;
  cpu::Dyadic in_to_int8_, post_to_int8_;
  IntonlyLinear q_, k_, v_, o_, gate_, up_, down_;
  cpu::IExpConstants score_exp_;
  cpu::Dyadic attn_to_input_;  // attention output -> o_proj's input (int8 static, or the fine scale)
  cpu::ISiluConstants silu_;
  cpu::Dyadic act_to_input_;   // SiLU x up -> down_proj's input (likewise)
};

}  // namespace fsq
