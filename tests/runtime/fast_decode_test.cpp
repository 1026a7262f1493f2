// The decode fast path (runtime/fast_decode.h) against the ATen layers it bypasses: the same
// tiny dense model loaded twice, prefilled on the ATen path, then decoded step by step with
// the KV cache; every step's logits agree within kFastDecodeTolerance.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <vector>

#include "formats/checkpoint.h"
#include "runtime/model.h"
#include "temp_dir.h"
#include "tiny_model.h"

namespace fsq {
namespace {

constexpr double kFastDecodeTolerance = 1e-4;  // issue 22: max abs logit difference in f32
constexpr int64_t kPrompt = 5, kSteps = 40;

struct Loaded {
  Checkpoint ckpt;
  std::unique_ptr<LlamaModel> fast, reference;
};

Loaded load_both(const std::filesystem::path& dir) {
  Loaded l{Checkpoint::open(dir), nullptr, nullptr};
  RuntimeOptions off;
  off.fast_decode = false;
  l.fast = LlamaModel::load(l.ckpt, RuntimeOptions{});
  l.reference = LlamaModel::load(l.ckpt, off);
  return l;
}

// Prefills kPrompt random tokens per sequence, then feeds the reference's greedy tokens for
// kSteps steps to both models; returns the largest logit difference over the steps.
double max_decode_difference(const LlamaModel& fast, const LlamaModel& reference, int64_t batch, int64_t vocab) {
  at::manual_seed(3);
  const at::Tensor prompt = at::randint(0, vocab, {batch, kPrompt}, at::kLong);
  KVCache fast_cache = fast.new_cache(batch, kPrompt + kSteps);
  KVCache ref_cache = reference.new_cache(batch, kPrompt + kSteps);
  at::Tensor ref_logits = reference.forward(prompt, &ref_cache);
  fast.forward(prompt, &fast_cache);
  double worst = 0.0;
  for (int64_t t = 0; t < kSteps; ++t) {
    const at::Tensor next = ref_logits.select(1, -1).argmax(-1).unsqueeze(1);
    ref_logits = reference.forward(next, &ref_cache);
    const at::Tensor got = fast.forward(next, &fast_cache);
    EXPECT_EQ(got.sizes(), ref_logits.sizes());
    EXPECT_TRUE(at::isfinite(got).all().item<bool>());
    worst = std::max(worst, (got - ref_logits).abs().max().item<double>());
  }
  EXPECT_EQ(fast_cache.length, ref_cache.length);
  // The caches hold the same keys and values (the fast path wrote its own).
  for (size_t i = 0; i < fast_cache.k.size(); ++i)
    worst = std::max(worst, (fast_cache.k[i] - ref_cache.k[i]).abs().max().item<double>());
  return worst;
}

struct DecodeCase {
  const char* name;
  testing::TinyModelSpec spec;
};
void PrintTo(const DecodeCase& c, std::ostream* os) { *os << c.name; }

class FastDecodeTest : public ::testing::TestWithParam<DecodeCase> {};

TEST_P(FastDecodeTest, StepsMatchTheAtenLayersOverAGeneration) {
  const DecodeCase& c = GetParam();
  const testing::TempDir scratch(std::string("fsq-fast-") + c.name);
  const auto& dir = scratch.path();
  testing::write_tiny_model(dir, c.spec);
  Loaded m = load_both(dir);
  EXPECT_EQ(m.fast->fast_decode_unavailable(), "");
  EXPECT_NE(m.reference->fast_decode_unavailable(), "");
  for (int64_t batch : {1, 3, 8, 9})  // 9: more than the fast path takes, so the ATen layers run
    EXPECT_LE(max_decode_difference(*m.fast, *m.reference, batch, c.spec.vocab), kFastDecodeTolerance)
        << "batch " << batch;
}

testing::TinyModelSpec decode_spec(int64_t heads, int64_t kv_heads, bool tied, const char* arch = "LlamaForCausalLM") {
  testing::TinyModelSpec s;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.tied = tied;
  s.architecture = arch;
  s.hidden = 64;
  s.intermediate = 80;
  s.layers = 3;
  return s;
}

INSTANTIATE_TEST_SUITE_P(Models, FastDecodeTest,
                         ::testing::Values(DecodeCase{"gqa", decode_spec(4, 2, false)}, DecodeCase{"mha_tied", decode_spec(4, 4, true)},
                                           DecodeCase{"mqa", decode_spec(4, 1, false)},
                                           DecodeCase{"qwen2_bias", decode_spec(4, 2, true, "Qwen2ForCausalLM")}),
                         [](const auto& info) { return std::string(info.param.name); });

// Two threads share 27 query heads (batch 3 x 9 heads, 3 per KV head, as SmolLM2) as 13 +
// 14, so the second share starts inside a KV head's run: the logits must be bit-identical to
// one thread's, step after step. The prompt is long enough for the parallel attention
// (batch x heads x keys x head_dim = 3 x 9 x 160 x 16 >= fast_decode.cpp's 1 << 15); the
// ATen prefill runs on one thread both times.
TEST(FastDecode, ThreadsSplittingKvHeadsGiveBitIdenticalLogits) {
  testing::TinyModelSpec spec = decode_spec(9, 3, false);
  spec.hidden = 144;
  spec.max_positions = 256;
  const testing::TempDir scratch("fsq-fast-threads");
  const auto& dir = scratch.path();
  testing::write_tiny_model(dir, spec);
  Loaded m = load_both(dir);
  ASSERT_EQ(m.fast->fast_decode_unavailable(), "");
  constexpr int64_t kBatch = 3, kLongPrompt = 160, kDecodeSteps = 8;
  const int threads_before = at::get_num_threads();
  const auto decode = [&](int threads) {
    at::set_num_threads(1);
    at::manual_seed(5);
    const at::Tensor prompt = at::randint(0, spec.vocab, {kBatch, kLongPrompt}, at::kLong);
    KVCache cache = m.fast->new_cache(kBatch, kLongPrompt + kDecodeSteps);
    at::Tensor logits = m.fast->forward(prompt, &cache);
    at::set_num_threads(threads);
    std::vector<at::Tensor> steps;
    for (int64_t t = 0; t < kDecodeSteps; ++t) {
      logits = m.fast->forward(logits.select(1, -1).argmax(-1).unsqueeze(1), &cache);
      steps.push_back(logits.clone());
    }
    return steps;
  };
  const std::vector<at::Tensor> one = decode(1), two = decode(2);
  at::set_num_threads(threads_before);
  for (size_t t = 0; t < one.size(); ++t) EXPECT_TRUE(at::equal(one[t], two[t])) << "decode step " << t;
}

TEST(FastDecode, NarrowWeightsOrComputeKeepTheAtenLayersAndSayWhy) {
  const testing::TempDir scratch("fsq-fast-narrow");
  const auto& dir = scratch.path();
  testing::write_tiny_model(dir, decode_spec(4, 2, false));
  Checkpoint ckpt = Checkpoint::open(dir);
  RuntimeOptions bf16_weights;
  bf16_weights.weight_dtype = at::kBFloat16;
  EXPECT_NE(LlamaModel::load(ckpt, bf16_weights)->fast_decode_unavailable().find("not f32"), std::string::npos);
  RuntimeOptions bf16_compute;
  bf16_compute.compute_dtype = at::kBFloat16;
  EXPECT_NE(LlamaModel::load(ckpt, bf16_compute)->fast_decode_unavailable().find("compute dtype"), std::string::npos);
}

}  // namespace
}  // namespace fsq
