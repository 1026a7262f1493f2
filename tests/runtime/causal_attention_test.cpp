// Blocked causal attention against a direct double-precision computation, for every block
// size (one row, a size that does not divide T, one whole block), with grouped-query heads,
// a batch of 2, and queries behind a cached prefix (S > T) as in decode and chunked prefill.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>

#include "runtime/causal_attention.h"

namespace fsq {
namespace {

// out[b, t, h*D + d] = sum_s softmax_s(q.k / sqrt(D)) v[s, d], keys s <= S - T + t, in double.
at::Tensor direct_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3), S = k.size(2);
  const int64_t rep = H / k.size(1);
  at::Tensor qd = q.to(at::kDouble), kd = k.to(at::kDouble), vd = v.to(at::kDouble);
  at::Tensor out = at::zeros({B, T, H * D}, at::kDouble);
  auto Q = qd.accessor<double, 4>(), K = kd.accessor<double, 4>(), V = vd.accessor<double, 4>();
  auto O = out.accessor<double, 3>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) {
        const int64_t last = S - T + t, g = h / rep;
        std::vector<double> w(size_t(last + 1));
        double mx = -1e300, z = 0;
        for (int64_t s = 0; s <= last; ++s) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += Q[b][h][t][d] * K[b][g][s][d];
          w[size_t(s)] = dot / std::sqrt(double(D));
          mx = std::max(mx, w[size_t(s)]);
        }
        for (double& x : w) z += (x = std::exp(x - mx));
        for (int64_t d = 0; d < D; ++d) {
          double acc = 0;
          for (int64_t s = 0; s <= last; ++s) acc += w[size_t(s)] / z * V[b][g][s][d];
          O[b][t][h * D + d] = acc;
        }
      }
  return out;
}

// Float32 error of one output: the probabilities carry a few ulps of relative error each
// (dot products of D terms, exp, normalization), and the sum over up to S values of |v| <= vmax
// adds one rounding per term; 8 ulps per term is a generous cover of both.
double tolerance(int64_t S, double vmax) { return 8.0 * double(S) * FLT_EPSILON * vmax; }

void check(int64_t T, int64_t S) {
  const int64_t B = 2, H = 6, KV = 2, D = 16;
  at::manual_seed(1234 + T * 100 + S);
  at::Tensor q = at::randn({B, H, T, D}), k = at::randn({B, KV, S, D}), v = at::randn({B, KV, S, D});
  at::Tensor want = direct_attention(q, k, v);
  const double tol = tolerance(S, v.abs().max().item<double>());
  at::Tensor whole = causal_attention(q, k, v, T);
  for (int64_t rows : {int64_t{1}, int64_t{5}, T, int64_t{0}}) {
    at::Tensor got = causal_attention(q, k, v, rows);
    ASSERT_EQ(got.sizes(), (std::vector<int64_t>{B, T, H * D}));
    EXPECT_LE((got.to(at::kDouble) - want).abs().max().item<double>(), tol) << "T " << T << " S " << S << " rows " << rows;
    EXPECT_LE((got - whole).abs().max().item<double>(), tol) << "rows " << rows << " vs one block";
  }
}

TEST(CausalAttention, PrefillMatchesDirectForEveryBlockSize) { check(23, 23); }
TEST(CausalAttention, QueriesAfterACachedPrefixMatchDirect) { check(7, 30); }
TEST(CausalAttention, SingleDecodeStepSeesEveryKey) { check(1, 19); }

TEST(CausalAttention, BlockRowsKeepScoresUnderTheBudget) {
  // SmolLM2's 2048-token window: 9 heads x 2048 keys x 4 bytes = 72 KiB per query row.
  const int64_t rows = attention_block_rows(1, 9, 2048);
  EXPECT_LE(rows * 9 * 2048 * 4, kAttentionScoresBlockBytes);
  EXPECT_GT((rows + 1) * 9 * 2048 * 4, kAttentionScoresBlockBytes);
  EXPECT_EQ(attention_block_rows(64, 64, 1 << 20), 1);  // never zero
}

}  // namespace
}  // namespace fsq
