// The integer-only RoPE and causal attention kernels (runtime/cpu/intonly_attention.h) against
// the real-valued functions of the same integer inputs, with bounds from the arithmetic:
//   RoPE: the Q14 tables are off by <= 2^-15 each, so r is off by <= (|a| + |b|) 2^-15 input
//   codes, i.e. (|a| + |b|) 2^-15 / 2^extra output codes, plus the final rounding's 0.5
//   (outputs clamped to the 12-bit query/key codes, |code| <= kQkCodeMax).
//   Attention: each probability is off by <= kSoftmaxProbError (intonly_ops.h's i-softmax
//   bound, 2 rho / (1 - rho) + 2^-(k+1) with rho = 3e-3), so an output is off by <= 0.5 (the
//   final rounding) + sum_j kSoftmaxProbError |v_j| times the output multiplier.
#include "runtime/cpu/intonly_attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace fsq {
namespace {

using namespace cpu;

constexpr double kIExpRelError = 3e-3;  // intonly_ops.h: i-exp relative error on [-10, 0]
constexpr int kProbBits = kSoftmaxI16FracBits;
const double kSoftmaxProbError = 2 * kIExpRelError / (1 - kIExpRelError) + std::ldexp(0.5, -kProbBits);
constexpr double kRoundingError = 0.5;  // round half away of an exact rational

TEST(IntonlyRope, MatchesTheRealRotationWithinTheTableAndRoundingError) {
  constexpr int64_t kTokens = 7, kHeads = 3, kDim = 16, kFirst = 2, kExtra = 8;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int32_t> code(-kQkCodeMax * (1 << kExtra), kQkCodeMax * (1 << kExtra));
  std::vector<int32_t> x(kTokens * kHeads * kDim);
  for (auto& v : x) v = code(rng);
  const int64_t positions = kFirst + kTokens;
  std::vector<double> cos_r(positions * kDim), sin_r(cos_r.size());
  std::vector<int32_t> cos_q(cos_r.size()), sin_q(cos_r.size());
  for (int64_t p = 0; p < positions; ++p)
    for (int64_t i = 0; i < kDim; ++i) {
      const double inv = std::pow(10000.0, -2.0 * static_cast<double>(i % (kDim / 2)) / kDim);
      const size_t at = static_cast<size_t>(p * kDim + i);
      cos_r[at] = std::cos(p * inv);
      sin_r[at] = std::sin(p * inv);
      cos_q[at] = static_cast<int32_t>(std::lround(std::ldexp(cos_r[at], kRopeFracBits)));
      sin_q[at] = static_cast<int32_t>(std::lround(std::ldexp(sin_r[at], kRopeFracBits)));
    }
  std::vector<int16_t> out(x.size());
  ASSERT_EQ(irope(x.data(), kTokens, kHeads, kDim, cos_q.data(), sin_q.data(), kFirst, kExtra, kQkCodeMax, out.data()),
            KernelStatus::Ok);
  const int64_t half = kDim / 2;
  double worst = 0;
  for (int64_t t = 0; t < kTokens; ++t)
    for (int64_t h = 0; h < kHeads; ++h)
      for (int64_t i = 0; i < kDim; ++i) {
        const int32_t* xr = x.data() + (t * kHeads + h) * kDim;
        const size_t c = static_cast<size_t>((kFirst + t) * kDim + i);
        const double a = xr[i], b = i < half ? -double(xr[i + half]) : double(xr[i - half]);
        const double exact = std::ldexp(a * cos_r[c] + b * sin_r[c], -kExtra);
        const double clipped = std::clamp(exact, -double(kQkCodeMax), double(kQkCodeMax));
        const double bound = kRoundingError + std::ldexp((std::abs(a) + std::abs(b)), -(kRopeFracBits + 1 + kExtra));
        const double err = std::abs(out[static_cast<size_t>((t * kHeads + h) * kDim + i)] - clipped);
        worst = std::max(worst, err / bound);
        ASSERT_LE(err, bound) << t << " " << h << " " << i;
      }
  std::printf("irope: worst error / bound %.3f\n", worst);
  EXPECT_EQ(irope(x.data(), kTokens, kHeads, kDim - 1, cos_q.data(), sin_q.data(), 0, kExtra, kQkCodeMax, out.data()),
            KernelStatus::InvalidArgument);
  EXPECT_EQ(irope(x.data(), kTokens, kHeads, kDim, cos_q.data(), sin_q.data(), 0, kExtra, 40000, out.data()),
            KernelStatus::InvalidArgument);
}

struct AttentionCase {
  int64_t batch, tokens, heads, kv_heads, dim;
};

class IntonlyAttention : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(IntonlyAttention, MatchesRealSoftmaxAttentionOfTheSameCodes) {
  const AttentionCase c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(c.tokens * 31 + c.heads));
  std::uniform_int_distribution<int> qk_code(-kQkCodeMax, kQkCodeMax), v_code(-127, 127);
  auto fill_qk = [&](int64_t n) {
    std::vector<int16_t> v(static_cast<size_t>(n));
    for (auto& x : v) x = static_cast<int16_t>(qk_code(rng));
    return v;
  };
  const std::vector<int16_t> q = fill_qk(c.batch * c.tokens * c.heads * c.dim),
                             k = fill_qk(c.batch * c.tokens * c.kv_heads * c.dim);
  std::vector<int8_t> v(static_cast<size_t>(c.batch * c.tokens * c.kv_heads * c.dim));
  for (auto& x : v) x = static_cast<int8_t>(v_code(rng));
  // Scales that spread the logits over about [-8, 8], as a trained model's do.
  const double s_q = 0.02 * 127 / kQkCodeMax, s_k = s_q, s_v = 0.05, s_out = 0.06;
  const double logit_scale = s_q * s_k / std::sqrt(static_cast<double>(c.dim));
  const IExpConstants exp = iexp_constants(logit_scale);
  const double multiplier = std::ldexp(s_v, -kProbBits) / s_out;
  const Dyadic to_out = dyadic_from_real(multiplier);
  std::vector<int8_t> out(q.size());
  ASSERT_EQ(iattention(q.data(), k.data(), v.data(), {c.batch, c.tokens, c.heads, c.kv_heads, c.dim}, exp, kProbBits,
                       to_out, out.data()),
            KernelStatus::Ok);
  const int64_t rep = c.heads / c.kv_heads;
  double worst = 0;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t t = 0; t < c.tokens; ++t) {
        const int64_t g = h / rep;
        std::vector<double> logits(static_cast<size_t>(t + 1));
        double mx = -1e300;
        for (int64_t j = 0; j <= t; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < c.dim; ++d)
            dot += double(q[((b * c.tokens + t) * c.heads + h) * c.dim + d]) *
                   k[((b * c.tokens + j) * c.kv_heads + g) * c.dim + d];
          logits[static_cast<size_t>(j)] = dot * logit_scale;
          mx = std::max(mx, logits[static_cast<size_t>(j)]);
        }
        double sum = 0;
        for (auto& l : logits) sum += (l = std::exp(l - mx));
        for (int64_t d = 0; d < c.dim; ++d) {
          double exact = 0, spread = 0;
          for (int64_t j = 0; j <= t; ++j) {
            const double vj = v[((b * c.tokens + j) * c.kv_heads + g) * c.dim + d];
            exact += logits[static_cast<size_t>(j)] / sum * vj;
            spread += std::abs(vj);
          }
          exact *= s_v / s_out;
          const double bound = kRoundingError + kSoftmaxProbError * spread * s_v / s_out;
          const double err = std::abs(out[((b * c.tokens + t) * c.heads + h) * c.dim + d] - exact);
          worst = std::max(worst, err / bound);
          ASSERT_LE(err, bound) << b << " " << h << " " << t << " " << d;
        }
      }
  std::printf("iattention: worst error / bound %.3f\n", worst);
}

INSTANTIATE_TEST_SUITE_P(Shapes, IntonlyAttention,
                         ::testing::Values(AttentionCase{1, 1, 1, 1, 8}, AttentionCase{2, 9, 4, 2, 16},
                                           AttentionCase{1, 33, 6, 1, 12}, AttentionCase{2, 20, 2, 2, 32}));

TEST(IntonlyAttentionCausal, LaterKeysAndValuesDoNotChangeEarlierRows) {
  constexpr int64_t T = 12, H = 2, D = 8, kChanged = 7;
  std::mt19937 rng(9);
  std::uniform_int_distribution<int> code(-127, 127);
  std::vector<int16_t> q(T * H * D), k(q.size());
  std::vector<int8_t> v(q.size());
  for (auto* t : {&q, &k})
    for (auto& x : *t) x = static_cast<int16_t>(code(rng) * 16);
  for (auto& x : v) x = static_cast<int8_t>(code(rng));
  const IExpConstants exp = iexp_constants(1e-3 / 256);
  const Dyadic to_out = dyadic_from_real(std::ldexp(1.0, -kProbBits));
  std::vector<int8_t> a(q.size()), b(q.size());
  ASSERT_EQ(iattention(q.data(), k.data(), v.data(), {1, T, H, H, D}, exp, kProbBits, to_out, a.data()),
            KernelStatus::Ok);
  for (int64_t i = kChanged * H * D; i < T * H * D; ++i) k[i] = v[i] = 0;
  ASSERT_EQ(iattention(q.data(), k.data(), v.data(), {1, T, H, H, D}, exp, kProbBits, to_out, b.data()),
            KernelStatus::Ok);
  EXPECT_TRUE(std::equal(a.begin(), a.begin() + kChanged * H * D, b.begin()));
  EXPECT_FALSE(std::equal(a.begin() + kChanged * H * D, a.end(), b.begin() + kChanged * H * D));
  EXPECT_EQ(iattention(q.data(), k.data(), v.data(), {1, T, 3, 2, D}, exp, kProbBits, to_out, a.data()),
            KernelStatus::InvalidArgument);
  // The int32 output (for per-token narrowing) is the int8 one before saturation: at a 64x
  // finer output scale it holds 64x the codes, up to the two roundings (|64 x - 64 b| <= 32,
  // |wide - 64 x| <= 1/2).
  std::vector<int32_t> wide(q.size());
  ASSERT_EQ(iattention(q.data(), k.data(), v.data(), {1, T, H, H, D}, exp, kProbBits,
                       dyadic_from_real(std::ldexp(1.0, 6 - kProbBits)), wide.data()),
            KernelStatus::Ok);
  ASSERT_EQ(iattention(q.data(), k.data(), v.data(), {1, T, H, H, D}, exp, kProbBits, to_out, b.data()),
            KernelStatus::Ok);
  for (size_t i = 0; i < wide.size(); ++i) EXPECT_LE(std::abs(int64_t{wide[i]} - 64 * int64_t{b[i]}), 32) << i;
  EXPECT_EQ(iattention(q.data(), k.data(), v.data(), {1, 1, 1, 1, kMaxQkHeadDim + 1}, exp, kProbBits, to_out, a.data()),
            KernelStatus::InvalidArgument);
}

}  // namespace
}  // namespace fsq
