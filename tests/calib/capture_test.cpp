// Layer-streaming statistics against a brute-force reference: the whole model run at once
// with every group input materialized, statistics computed directly in double.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "calib/layer_stream.h"
#include "float_bounds.h"
#include "formats/checkpoint.h"
#include "runtime/model.h"
#include "runtime/threads.h"
#include "temp_dir.h"
#include "tiny_model.h"

namespace fsq {
namespace {

constexpr double kMeanRelTolerance = 1e-6;     // issue: means within 1e-6 relative
constexpr double kRecomputeTolerance = 1e-5;   // a group input recomputed by hand in the test
// Micro-batches of another size change GEMM blocking, so activations differ by f32 rounding
// (float_bounds.h): a group input of layer i went through at most `layers` layers whose
// longest reduction is max(hidden, intermediate, tokens) = 48 here; squares (sqmean) double
// the relative error, two differently blocked sides double it again:
// 4 * 3 * 48 * 2^-24 = 3.4e-5 relative.
double batching_tolerance(const testing::TinyModelSpec& spec, int64_t tokens) {
  return 4 * testing::f32_chain_bound(spec.layers, std::max({spec.hidden, spec.intermediate, tokens}));
}

// Keeps every group input of one layer as [tokens, channels] in double.
class CollectTap final : public LayerTap {
 public:
  void group_input(const std::string& group, const at::Tensor& x) override {
    seen[group] = x.detach().to(at::kDouble).reshape({-1, x.size(-1)});
  }
  std::map<std::string, at::Tensor> seen;
};

// tolerance 0: absmax exact and means within kMeanRelTolerance (same forward computation);
// else everything within `tolerance` relative (a differently batched forward).
void expect_stats_equal(const ChannelStats& got, const at::Tensor& rows, const std::string& what, double tolerance = 0) {
  ASSERT_EQ(got.count(), rows.size(0)) << what;
  at::Tensor absmax = rows.abs().amax(0).to(at::kFloat);
  at::Tensor mean = rows.mean(0), sqmean = rows.pow(2).mean(0);
  for (int64_t c = 0; c < rows.size(1); ++c) {
    const auto j = static_cast<size_t>(c);
    const double a = absmax[c].item<float>(), m = mean[c].item<double>(), q = sqmean[c].item<double>();
    if (tolerance == 0) {
      EXPECT_EQ(got.absmax()[j], a) << what << " channel " << c;
    } else {
      EXPECT_LE(std::fabs(got.absmax()[j] - a), tolerance * a) << what << " channel " << c;
    }
    const double rel = tolerance == 0 ? kMeanRelTolerance : tolerance;
    // Relative to the channel's RMS, so a mean near zero is held to the same precision.
    EXPECT_LE(std::fabs(got.mean()[j] - m), rel * std::sqrt(q)) << what << " channel " << c;
    EXPECT_LE(std::fabs(got.sqmean()[j] - q), rel * q) << what << " channel " << c;
  }
}

at::Tensor dense_weight(const DecoderLayer& layer, const std::string& role) {
  return dynamic_cast<const DenseLinear&>(*layer.linear(role)).weight().to(at::kDouble);
}

class CaptureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CaptureTest, StreamedStatisticsEqualBruteForce) {
  set_threads(1);
  testing::TinyModelSpec spec;
  spec.architecture = GetParam();
  spec.layers = 3;
  const testing::TempDir scratch("fsq-calib-capture");
  const auto& dir = scratch.path();
  testing::write_tiny_model(dir, spec);
  Checkpoint ckpt = Checkpoint::open(dir);
  auto full = LlamaModel::load(ckpt, RuntimeOptions{});
  auto shell = LlamaModel::load(ckpt, RuntimeOptions{}, /*with_layers=*/false);
  ASSERT_TRUE(shell->layers().empty());

  at::manual_seed(3);
  const int64_t n = 7, t = 11;
  at::Tensor ids = at::randint(0, spec.vocab, {n, t}, at::kLong);
  // One micro-batch: the same computation as the brute force, so results are exact. Three
  // windows per batch (7 = 3 + 3 + 1): equal up to float rounding.
  StreamResult streamed = stream_activation_stats(*shell, ckpt, ids, {/*batch_size=*/n, /*keep_layer_inputs=*/true});
  StreamResult batched = stream_activation_stats(*shell, ckpt, ids, {/*batch_size=*/3, /*keep_layer_inputs=*/false});
  ASSERT_EQ(streamed.layers.size(), 3u);
  ASSERT_EQ(streamed.hidden.size(), 4u);
  EXPECT_TRUE(batched.hidden.empty());

  at::NoGradGuard no_grad;
  const ModelConfig& cfg = full->config();
  at::Tensor h = full->embed(ids);
  for (int64_t i = 0; i < cfg.num_layers; ++i) {
    const DecoderLayer& layer = full->layers()[static_cast<size_t>(i)];
    EXPECT_TRUE(at::equal(streamed.hidden[static_cast<size_t>(i)], h)) << "input of layer " << i;
    CollectTap tap;
    at::Tensor y = layer.forward(h, full->rope(h.size(1)), cfg, 0, nullptr, i, &tap);
    const LayerActivationStats& got = streamed.layers[static_cast<size_t>(i)];
    ASSERT_EQ(got.groups.size(), 4u);
    for (const auto& [group, rows] : tap.seen) {
      const std::string what = "layer " + std::to_string(i) + " " + group;
      expect_stats_equal(got.groups.at(group), rows, what);
      expect_stats_equal(batched.layers[static_cast<size_t>(i)].groups.at(group), rows, what + " (batched)",
                         batching_tolerance(spec, t));
    }
    expect_stats_equal(got.output, y.to(at::kDouble).reshape({-1, cfg.hidden_size}), "layer output");

    // The taps sit where the issue says: attn_in is RMSNorm(h) * w, mlp_out is
    // silu(gate(y)) * up(y) of the recorded mlp_in.
    at::Tensor hd = h.to(at::kDouble).reshape({-1, cfg.hidden_size});
    at::Tensor normed = hd * at::rsqrt(hd.pow(2).mean(-1, true) + cfg.rms_norm_eps) * layer.input_norm.to(at::kDouble);
    EXPECT_LE((normed - tap.seen["attn_in"]).abs().max().item<double>(), kRecomputeTolerance);
    at::Tensor y_in = tap.seen["mlp_in"];
    at::Tensor act = at::silu(at::matmul(y_in, dense_weight(layer, "gate_proj").t())) *
                     at::matmul(y_in, dense_weight(layer, "up_proj").t());
    EXPECT_LE((act - tap.seen["mlp_out"]).abs().max().item<double>(), kRecomputeTolerance);
    h = y;
  }
  EXPECT_TRUE(at::equal(streamed.hidden.back(), h));
}

INSTANTIATE_TEST_SUITE_P(Architectures, CaptureTest, ::testing::Values("LlamaForCausalLM", "Qwen2ForCausalLM"));

}  // namespace
}  // namespace fsq
