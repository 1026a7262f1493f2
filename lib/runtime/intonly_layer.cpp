#include "runtime/intonly_layer.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "formats/packed_checkpoint.h"
#include "runtime/cpu/intonly_attention.h"
#include "runtime/decoder_layer.h"
#include "runtime/int8_linear.h"
#include "runtime/packed_forward.h"

namespace fsq {
namespace {

constexpr int64_t kInt8Max = 127;
constexpr int64_t kMlpCodeMax = 32767;  // gate/up codes saturate at the int16 range
constexpr int64_t kRowGrain = 16;       // rows per parallel task

std::string where(int64_t index) { return "integer-only layer " + std::to_string(index); }

const Int8Linear& int8_of(const DecoderLayer& layer, const std::string& role, int64_t index) {
  const auto* l = dynamic_cast<const Int8Linear*>(layer.linear(role).get());
  if (!l || l->act_quant() != ActivationQuant::PerTensor)
    throw Error(where(index), role + " is " + layer.linear(role)->describe() +
                                  "; the integer-only path needs w8a8static linears (fsq quantize --method intonly)");
  return *l;
}

// out_scale: the scale the accumulators are requantized to; in_scale: the scale of the int8
// input (the static one, or a token-scaled input's fine scale).
IntonlyLinear make_linear(const Int8Linear& l, double out_scale, double in_scale) {
  IntonlyLinear r;
  r.w = l.prepared();
  r.isa = l.cpu_isa();
  r.in_scale = in_scale;
  r.rows = l.out_features();
  r.cols = l.in_features();
  r.w_scales.assign(l.weight_scales().begin(), l.weight_scales().end());
  at::Tensor bias;
  if (l.bias()) bias = l.bias()->to(at::kDouble).contiguous();
  for (int64_t j = 0; j < r.rows; ++j) {
    const double acc_scale = r.in_scale * r.w_scales[static_cast<size_t>(j)];
    r.to_out.push_back(cpu::dyadic_from_real(acc_scale / out_scale));
    if (bias.defined())
      r.bias_acc.push_back(acc_scale > 0 ? std::llround(bias.data_ptr<double>()[j] / acc_scale) : 0);
  }
  return r;
}

// acc [m, rows] = x [m, cols] W^T in int32.
std::vector<int32_t> gemm(const IntonlyLinear& l, const int8_t* x, int64_t m, int64_t index) {
  std::vector<int32_t> acc(static_cast<size_t>(m * l.rows));
  check_kernel_status(cpu::int8_gemm_int32(l.w, x, m, l.cols, acc.data(), l.rows, l.isa), where(index));
  return acc;
}

// out[i, j] = saturate(requantize(acc[i, j] + bias_j, to_out[j])) clamped to [-limit, limit].
template <typename Out>
void requantize_rows(const IntonlyLinear& l, const std::vector<int32_t>& acc, int64_t m, int64_t limit, Out* out) {
  at::parallel_for(0, m, kRowGrain, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = 0; j < l.rows; ++j) {
        int64_t a = acc[static_cast<size_t>(i * l.rows + j)];
        if (!l.bias_acc.empty()) a += l.bias_acc[static_cast<size_t>(j)];
        const int64_t v = cpu::requantize_wide(a, l.to_out[static_cast<size_t>(j)]);
        out[i * l.rows + j] = static_cast<Out>(std::clamp(v, -limit, limit));
      }
  });
}

// h[i, j] = saturate_int32(h[i, j] + requantized update). shifts (token-scaled inputs, else
// empty): row i's input codes had scale in_scale 2^shifts[i], so its accumulators are
// shifted back first (|acc| < 2^31, shift <= 25: exact in int64).
void add_residual(const IntonlyLinear& l, const std::vector<int32_t>& acc, int64_t m, const std::vector<int>& shifts,
                  int32_t* h) {
  at::parallel_for(0, m, kRowGrain, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = 0; j < l.rows; ++j) {
        int64_t a = acc[static_cast<size_t>(i * l.rows + j)];
        if (!shifts.empty()) a *= int64_t{1} << shifts[static_cast<size_t>(i)];
        if (!l.bias_acc.empty()) a += l.bias_acc[static_cast<size_t>(j)];
        const int64_t v = cpu::requantize_wide(a, l.to_out[static_cast<size_t>(j)]);
        h[i * l.rows + j] = cpu::saturate_int32(int64_t{h[i * l.rows + j]} + v);
      }
  });
}

// Rows of x [m, cols] (int32 at a fine scale) to int8 at each row's power-of-two scale.
std::vector<int8_t> quantize_tokens(const std::vector<int32_t>& x, int64_t m, int64_t cols, std::vector<int>& shifts,
                                    int64_t index) {
  std::vector<int8_t> out(x.size());
  shifts.assign(static_cast<size_t>(m), 0);
  at::parallel_for(0, m, kRowGrain, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      shifts[static_cast<size_t>(i)] = cpu::quantize_token_pow2(x.data() + i * cols, cols, out.data() + i * cols);
  });
  for (int k : shifts)
    if (k < 0) throw Error(where(index), "token quantization got an empty row");
  return out;
}

// The scale a token-scaled input is first requantized to: static / 2^bits with the most bits
// up to kTokenFineBits that keep multiplier_at_static * 2^bits <= 2^30 (dyadic_from_real's
// limit).
double fine_scale(double static_scale, double multiplier_at_static) {
  int bits = kTokenFineBits;
  while (bits > 0 && std::ldexp(multiplier_at_static, bits) > std::ldexp(1.0, 30)) --bits;
  return std::ldexp(static_scale, -bits);
}

std::vector<int16_t> gain_codes(const at::Tensor& g, double* scale) {
  const at::Tensor f = g.to(at::kFloat).contiguous().cpu();
  std::vector<int16_t> q(static_cast<size_t>(f.numel()));
  *scale = cpu::quantize_gain_int16(f.data_ptr<float>(), f.numel(), q.data());
  return q;
}

}  // namespace

IntonlyLayer::IntonlyLayer(const DecoderLayer& layer, const ModelConfig& cfg, const float* ranges, int64_t index,
                           IntonlyInputs inputs)
    : inputs_(inputs), index_(index), hidden_(cfg.hidden_size), heads_(cfg.num_heads), kv_heads_(cfg.num_kv_heads),
      head_dim_(cfg.head_dim), inter_(cfg.intermediate_size) {
  const Int8Linear &q = int8_of(layer, "q_proj", index), &k = int8_of(layer, "k_proj", index),
                   &v = int8_of(layer, "v_proj", index), &o = int8_of(layer, "o_proj", index),
                   &gate = int8_of(layer, "gate_proj", index), &up = int8_of(layer, "up_proj", index),
                   &down = int8_of(layer, "down_proj", index);
  if (q.static_scale() != k.static_scale() || q.static_scale() != v.static_scale() ||
      gate.static_scale() != up.static_scale())
    throw Error(where(index), "q/k/v (and gate/up) must share one static input scale: they read one norm output");
  const auto range = [&](IntonlyRange r) { return static_cast<double>(ranges[r]); };
  s_res_ = std::max({range(kRangeResidualIn), range(kRangeResidualMid), range(kRangeResidualOut)}) /
           static_cast<double>(int64_t{1} << kResidualBits);
  if (head_dim_ > cpu::kMaxQkHeadDim)
    throw Error(where(index), "head_dim " + std::to_string(head_dim_) + " above the integer attention's " +
                                  std::to_string(cpu::kMaxQkHeadDim) + " (exact int32 scores)");
  const double s_q = range(kRangeQ) / cpu::kQkCodeMax, s_k = range(kRangeK) / cpu::kQkCodeMax;
  const double s_v = range(kRangeV) / kInt8Max;
  const double s_gate = range(kRangeGate) / static_cast<double>(int64_t{1} << kMlpCodeBits);
  const double s_up = range(kRangeUp) / static_cast<double>(int64_t{1} << kMlpCodeBits);

  norm_c_ = cpu::irmsnorm_constants(s_res_, cfg.rms_norm_eps, kNormFracBits, kNormOutFracBits);
  double sg_in = 0, sg_post = 0;
  g_in_ = gain_codes(layer.input_norm, &sg_in);
  g_post_ = gain_codes(layer.post_attn_norm, &sg_post);
  const double norm_out = std::ldexp(1.0, -kNormOutFracBits);
  in_to_int8_ = cpu::dyadic_from_real(sg_in * norm_out / q.static_scale());
  post_to_int8_ = cpu::dyadic_from_real(sg_post * norm_out / gate.static_scale());

  silu_ = cpu::isilu_constants(s_gate, kSigmoidFracBits);
  const double attn_scale = std::ldexp(s_v, -kProbFracBits), act_scale = silu_.out_scale * s_up;
  const bool token = inputs_ == IntonlyInputs::Token;
  const double o_in = token ? fine_scale(o.static_scale(), attn_scale / o.static_scale()) : o.static_scale();
  const double down_in = token ? fine_scale(down.static_scale(), act_scale / down.static_scale()) : down.static_scale();

  q_ = make_linear(q, std::ldexp(s_q, -kRopeExtraBits), q.static_scale());
  k_ = make_linear(k, std::ldexp(s_k, -kRopeExtraBits), k.static_scale());
  v_ = make_linear(v, s_v, v.static_scale());
  o_ = make_linear(o, s_res_, o_in);
  gate_ = make_linear(gate, s_gate, gate.static_scale());
  up_ = make_linear(up, s_up, up.static_scale());
  down_ = make_linear(down, s_res_, down_in);

  score_exp_ = cpu::iexp_constants(s_q * s_k / std::sqrt(static_cast<double>(head_dim_)));
  attn_to_input_ = cpu::dyadic_from_real(attn_scale / o_in);
  act_to_input_ = cpu::dyadic_from_real(act_scale / down_in);
}

std::vector<int8_t> IntonlyLayer::attention_output(const int16_t* q, const int16_t* k, const int8_t* v, int64_t batch,
                                                   int64_t tokens, std::vector<int>& shifts) const {
  const int64_t m = batch * tokens, cols = heads_ * head_dim_;
  const cpu::IAttentionShape shape{batch, tokens, heads_, kv_heads_, head_dim_};
  shifts.clear();
  if (inputs_ == IntonlyInputs::Static) {
    std::vector<int8_t> out(static_cast<size_t>(m * cols));
    check_kernel_status(cpu::iattention(q, k, v, shape, score_exp_, kProbFracBits, attn_to_input_, out.data()),
                        where(index_));
    return out;
  }
  std::vector<int32_t> fine(static_cast<size_t>(m * cols));
  check_kernel_status(cpu::iattention(q, k, v, shape, score_exp_, kProbFracBits, attn_to_input_, fine.data()),
                      where(index_));
  return quantize_tokens(fine, m, cols, shifts, index_);
}

std::vector<int8_t> IntonlyLayer::mlp_product(const std::vector<int32_t>& g, const std::vector<int32_t>& u, int64_t m,
                                              std::vector<int>& shifts) const {
  // |isilu| <= 2^15 2^16 and |u| <= 2^15: the product fits int64.
  auto product = [&](size_t i) { return cpu::isilu(g[i], silu_) * u[i]; };
  shifts.clear();
  if (inputs_ == IntonlyInputs::Static) {
    std::vector<int8_t> act(g.size());
    at::parallel_for(0, static_cast<int64_t>(g.size()), kRowGrain * inter_, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i)
        act[static_cast<size_t>(i)] = cpu::saturate_code8(cpu::requantize_wide(product(static_cast<size_t>(i)), act_to_input_));
    });
    return act;
  }
  std::vector<int32_t> fine(g.size());
  at::parallel_for(0, static_cast<int64_t>(g.size()), kRowGrain * inter_, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      fine[static_cast<size_t>(i)] = cpu::requantize(product(static_cast<size_t>(i)), act_to_input_);
  });
  return quantize_tokens(fine, m, inter_, shifts, index_);
}

void IntonlyLayer::norm(const int32_t* h, int64_t m, const std::vector<int16_t>& gain, cpu::Dyadic to_int8,
                        int8_t* out) const {
  at::parallel_for(0, m, kRowGrain, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      check_kernel_status(cpu::irmsnorm_row_int8(h + i * hidden_, hidden_, gain.data(), norm_c_, to_int8,
                                                 out + i * hidden_),
                          where(index_));
  });
}

void IntonlyLayer::forward(int32_t* h, int64_t batch, int64_t tokens, const FixedRope& rope) const {
  const int64_t m = batch * tokens, D = head_dim_;
  if (rope.positions < tokens || rope.head_dim != D)
    throw Error(where(index_), "rotary tables cover " + std::to_string(rope.positions) + " positions, the window " +
                                   std::to_string(tokens));
  // Attention block.
  std::vector<int8_t> x(static_cast<size_t>(m * hidden_));
  norm(h, m, g_in_, in_to_int8_, x.data());
  auto rotate = [&](const IntonlyLinear& l, int64_t heads) {
    std::vector<int32_t> pre(static_cast<size_t>(m * l.rows));
    requantize_rows(l, gemm(l, x.data(), m, index_), m, INT32_MAX, pre.data());
    std::vector<int16_t> out(pre.size());
    for (int64_t b = 0; b < batch; ++b)
      check_kernel_status(cpu::irope(pre.data() + b * tokens * l.rows, tokens, heads, D, rope.cos.data(),
                                     rope.sin.data(), 0, kRopeExtraBits, cpu::kQkCodeMax,
                                     out.data() + b * tokens * l.rows),
                          where(index_));
    return out;
  };
  const std::vector<int16_t> q16 = rotate(q_, heads_), k16 = rotate(k_, kv_heads_);
  std::vector<int8_t> v8(static_cast<size_t>(m * v_.rows));
  requantize_rows(v_, gemm(v_, x.data(), m, index_), m, kInt8Max, v8.data());
  std::vector<int> shifts;
  const std::vector<int8_t> attn = attention_output(q16.data(), k16.data(), v8.data(), batch, tokens, shifts);
  add_residual(o_, gemm(o_, attn.data(), m, index_), m, shifts, h);

  // MLP block.
  norm(h, m, g_post_, post_to_int8_, x.data());
  std::vector<int32_t> g(static_cast<size_t>(m * inter_)), u(g.size());
  requantize_rows(gate_, gemm(gate_, x.data(), m, index_), m, kMlpCodeMax, g.data());
  requantize_rows(up_, gemm(up_, x.data(), m, index_), m, kMlpCodeMax, u.data());
  const std::vector<int8_t> act = mlp_product(g, u, m, shifts);
  add_residual(down_, gemm(down_, act.data(), m, index_), m, shifts, h);
}

}  // namespace fsq
