// Fisher diagonals: the layer-checkpointed path (layer inputs stored, one layer recomputed
// at a time) against a direct computation with the whole model in one autograd graph:
// per sample, loss.backward() and accumulate grad^2.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "calib/fisher.h"
#include "calib/layer_stream.h"
#include "float_bounds.h"
#include "formats/checkpoint.h"
#include "runtime/model.h"
#include "runtime/threads.h"
#include "temp_dir.h"
#include "tiny_model.h"

namespace fsq {
namespace {

// Both sides are f32 computations of the same sums in different orders (the checkpointed path
// recomputes one layer at a time; each CPU's BLAS kernel blocks its own way), so they agree up
// to f32 rounding only. The 1e-5 relative held on one CPU and not on an AMD EPYC
// (1.18e-5 for Qwen2), so the bounds come from the arithmetic (float_bounds.h):
//  - the gradient of a layer's weight flows back through the head and at most every layer:
//    depth layers + 1, longest reduction max(hidden, intermediate, vocab, tokens) = 64 here:
//    f32_chain_bound = 4 * 64 * 2^-24 = 1.5e-5 relative;
//  - a Fisher entry is a squared gradient (twice the relative error), and the two sides err
//    independently (twice again): 4 x that = 6.1e-5 of the largest entry of the matrix;
//  - the mean loss is a forward value only: 2 sides x the same chain, relative to the loss.
double chain_bound(const testing::TinyModelSpec& spec, int64_t tokens) {
  return testing::f32_chain_bound(spec.layers + 1,
                                  std::max({spec.hidden, spec.intermediate, spec.vocab, tokens}));
}

struct Direct {
  std::vector<std::vector<at::Tensor>> fisher;  // [layer][role]
  double mean_loss = 0.0;
};

Direct direct_fisher(const LlamaModel& model, const at::Tensor& ids, const std::vector<std::string>& roles) {
  const ModelConfig& cfg = model.config();
  std::vector<DecoderLayer> layers;
  std::vector<std::vector<std::pair<std::string, at::Tensor>>> leaves(static_cast<size_t>(cfg.num_layers));
  for (int64_t i = 0; i < cfg.num_layers; ++i)
    layers.push_back(with_weight_leaves(model.layers()[static_cast<size_t>(i)], roles, leaves[static_cast<size_t>(i)]));
  Direct d;
  d.fisher.resize(leaves.size());
  for (size_t i = 0; i < leaves.size(); ++i)
    for (const auto& [role, w] : leaves[i]) d.fisher[i].push_back(at::zeros_like(w).detach());
  const int64_t n = ids.size(0), t = ids.size(1);
  for (int64_t s = 0; s < n; ++s) {
    at::Tensor row = ids.narrow(0, s, 1);
    at::Tensor h = model.embed(row);
    for (int64_t i = 0; i < cfg.num_layers; ++i) h = layers[static_cast<size_t>(i)].forward(h, model.rope(h.size(1)), cfg, 0, nullptr, i);
    // Mean next-token negative log-likelihood, written out here rather than via sample_loss.
    at::Tensor logp = at::log_softmax(model.head(h)[0], -1);
    at::Tensor targets = row[0].narrow(0, 1, t - 1);
    at::Tensor loss = -logp.narrow(0, 0, t - 1).gather(1, targets.unsqueeze(1)).mean();
    d.mean_loss += loss.item<double>() / static_cast<double>(n);
    loss.backward();
    for (size_t i = 0; i < leaves.size(); ++i)
      for (size_t j = 0; j < leaves[i].size(); ++j) {
        at::Tensor& w = leaves[i][j].second;
        d.fisher[i][j] += w.grad().detach().pow(2) / static_cast<double>(n);
        w.mutable_grad().reset();
      }
  }
  return d;
}

class FisherTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FisherTest, CheckpointedEqualsDirectPerSampleBackward) {
  set_threads(1);
  testing::TinyModelSpec spec;
  spec.architecture = GetParam();
  spec.layers = 3;
  spec.tied = GetParam() == "Qwen2ForCausalLM";
  const testing::TempDir scratch("fsq-calib-fisher");
  const auto& dir = scratch.path();
  testing::write_tiny_model(dir, spec);
  Checkpoint ckpt = Checkpoint::open(dir);
  auto full = LlamaModel::load(ckpt, RuntimeOptions{});
  auto shell = LlamaModel::load(ckpt, RuntimeOptions{}, /*with_layers=*/false);
  std::vector<std::string> roles;
  for (const auto& l : full->arch().linears) roles.push_back(l.role);

  at::manual_seed(5);
  at::Tensor ids = at::randint(0, spec.vocab, {5, 9}, at::kLong);
  StreamResult stream = stream_activation_stats(*shell, ckpt, ids, {2, true});
  FisherResult got = fisher_diagonals(*shell, ckpt, ids, stream.hidden);
  Direct want = direct_fisher(*full, ids, roles);

  const double fisher_tolerance = 4 * chain_bound(spec, ids.size(1));
  EXPECT_NEAR(got.mean_loss, want.mean_loss, 2 * chain_bound(spec, ids.size(1)) * std::fabs(want.mean_loss));
  ASSERT_EQ(got.layers.size(), want.fisher.size());
  for (size_t i = 0; i < got.layers.size(); ++i) {
    ASSERT_EQ(got.layers[i].size(), roles.size());
    for (size_t j = 0; j < roles.size(); ++j) {
      const auto& [role, f] = got.layers[i][j];
      EXPECT_EQ(role, roles[j]);
      const at::Tensor& w = want.fisher[i][j];
      ASSERT_EQ(f.sizes(), w.sizes()) << role;
      const double scale = w.abs().max().item<double>();
      ASSERT_GT(scale, 0.0) << "layer " << i << " " << role << ": every weight here affects the loss";
      EXPECT_LE((f - w).abs().max().item<double>(), fisher_tolerance * scale) << "layer " << i << " " << role;
      EXPECT_TRUE((f >= 0).all().item<bool>());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, FisherTest, ::testing::Values("LlamaForCausalLM", "Qwen2ForCausalLM"));

TEST(SampleLoss, IsMeanNextTokenCrossEntropy) {
  at::Tensor logits = at::tensor({0.0, 1.0, 2.0, 1.0, 0.0, 0.0, 3.0, 0.0, 0.0}, at::kFloat).reshape({3, 3});
  at::Tensor ids = at::tensor({0, 2, 0}, at::kLong);
  // Position 0 predicts id 2 from [0,1,2]; position 1 predicts id 0 from [1,0,0].
  const double l0 = std::log(1 + std::exp(-1.0) + std::exp(-2.0));
  const double l1 = -1.0 + std::log(std::exp(1.0) + 2.0);
  EXPECT_NEAR(sample_loss(logits, ids).item<double>(), (l0 + l1) / 2, 1e-6);
}

}  // namespace
}  // namespace fsq
