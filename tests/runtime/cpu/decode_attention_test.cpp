// The decode attention of the fast path (runtime/cpu/decode_attention.h) against its
// double-precision spec, every ISA, on head counts around the kernel's group of 4, head
// sizes around the vector widths and key counts from 1, with guarded outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "float_bounds.h"
#include "runtime/cpu/decode_attention.h"
#include "uniform_test_support.h"

namespace fsq {
namespace {

using cpu::CpuIsa;
using cpu::KernelStatus;

constexpr float kGuard = 12345.0f;  // written past the outputs; the kernel must leave it

std::vector<float> normal_values(int64_t n, float sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = normal(rng);
  return v;
}

// Per output (h, d), how far the float kernel may land from the double spec. The logits
// are length-D float dots times the scale: each off by at most delta_s = gamma_(D+1) scale
// sum_j |q_j k_sj|. With Delta their largest error, a weight p_s = exp(l_s - top) / total is
// off by at most 2 Delta relative (its own logit and the total's), plus expf (2 ulp), the
// length-S total and the division; the weighted sum of values adds gamma_S. All of it
// scales sum_s p_s |v_sd|, plus the reference's own rounding.
double output_bound(const cpu::DecodeAttentionArgs& a, int64_t h, int64_t d, double ref) {
  const int64_t D = a.head_dim, S = a.keys_count;
  std::vector<double> logits(static_cast<size_t>(S));
  double delta = 0.0;
  for (int64_t s = 0; s < S; ++s) {
    double dot = 0.0, magnitude = 0.0;
    for (int64_t j = 0; j < D; ++j) {
      dot += static_cast<double>(a.q[h * D + j]) * a.keys[s * D + j];
      magnitude += std::abs(static_cast<double>(a.q[h * D + j]) * a.keys[s * D + j]);
    }
    logits[static_cast<size_t>(s)] = dot * a.scale;
    delta = std::max(delta, testing::f32_chain_bound(1, D + 1) * a.scale * magnitude);
  }
  const double top = *std::max_element(logits.begin(), logits.end());
  double total = 0.0;
  for (double& l : logits) total += (l = std::exp(l - top));
  double weighted = 0.0;  // sum_s p_s |v_sd|
  for (int64_t s = 0; s < S; ++s) weighted += logits[static_cast<size_t>(s)] / total * std::abs(a.values[s * D + d]);
  const double weight_error = 2.0 * delta + testing::f32_chain_bound(1, S + 4);
  return (weight_error + testing::f32_chain_bound(1, S)) * weighted + testing::kF32UnitRoundoff * std::abs(ref);
}

TEST(DecodeAttention, MatchesTheSpecWithinTheF32BoundOnEveryIsa) {
  for (int64_t heads : {1, 2, 3, 4, 5, 9})
    for (int64_t D : {1, 7, 16, 33, 64, 80})
      for (int64_t S : {1, 2, 17, 64, 130}) {
        const std::vector<float> q = normal_values(heads * D, 1.0f, 3);
        const std::vector<float> keys = normal_values(S * D, 1.0f, 5), values = normal_values(S * D, 1.0f, 7);
        cpu::DecodeAttentionArgs a;
        a.q = q.data();
        a.heads = heads;
        a.keys = keys.data();
        a.values = values.data();
        a.keys_count = S;
        a.head_dim = D;
        a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
        std::vector<float> scores(static_cast<size_t>(heads * S)), ref(static_cast<size_t>(heads * D));
        a.scores = scores.data();
        a.out = ref.data();
        ASSERT_EQ(cpu::decode_attention_reference(a), KernelStatus::Ok);
        for (CpuIsa isa : test::supported_isas()) {
          SCOPED_TRACE("heads " + std::to_string(heads) + " D " + std::to_string(D) + " keys " + std::to_string(S) + " " +
                       cpu::cpu_isa_name(isa));
          std::vector<float> out(static_cast<size_t>(heads * D + 16), kGuard);
          a.out = out.data();
          ASSERT_EQ(cpu::decode_attention(a, isa), KernelStatus::Ok);
          for (size_t i = static_cast<size_t>(heads * D); i < out.size(); ++i) ASSERT_EQ(out[i], kGuard);
          for (int64_t h = 0; h < heads; ++h)
            for (int64_t d = 0; d < D; ++d) {
              const double r = ref[static_cast<size_t>(h * D + d)];
              ASSERT_NEAR(out[static_cast<size_t>(h * D + d)], r, output_bound(a, h, d, r)) << "head " << h << " lane " << d;
            }
        }
      }
}

TEST(DecodeAttention, RejectsMissingBuffersAndEmptyShapes) {
  const std::vector<float> q(64, 0.0f), kv(64, 0.0f);
  std::vector<float> scores(4), out(64);
  cpu::DecodeAttentionArgs a{q.data(), 1, kv.data(), kv.data(), 1, 64, 0.125f, scores.data(), out.data()};
  EXPECT_EQ(cpu::decode_attention(a, CpuIsa::Scalar), KernelStatus::Ok);
  cpu::DecodeAttentionArgs no_keys = a;
  no_keys.keys_count = 0;
  EXPECT_EQ(cpu::decode_attention(no_keys, CpuIsa::Scalar), KernelStatus::InvalidArgument);
  cpu::DecodeAttentionArgs no_out = a;
  no_out.out = nullptr;
  EXPECT_EQ(cpu::decode_attention(no_out, CpuIsa::Scalar), KernelStatus::InvalidArgument);
}

}  // namespace
}  // namespace fsq
