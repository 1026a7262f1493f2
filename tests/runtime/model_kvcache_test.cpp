// Incremental decoding with the KV cache must give the logits of a full forward pass.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "formats/checkpoint.h"
#include "common/error.h"
#include "runtime/model.h"
#include "temp_dir.h"
#include "tiny_model.h"

namespace fsq {
namespace {

constexpr double kCacheTolerance = 1e-5;  // issue: with and without KV cache identical within 1e-5

struct Case {
  const char* name;
  testing::TinyModelSpec spec;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class KVCacheTest : public ::testing::TestWithParam<Case> {};

TEST_P(KVCacheTest, IncrementalDecodeMatchesFullForward) {
  const Case& c = GetParam();
  const testing::TempDir scratch(std::string("fsq-kv-") + c.name);
  const auto& dir = scratch.path();
  testing::write_tiny_model(dir, c.spec);
  auto ckpt = Checkpoint::open(dir);
  auto model = LlamaModel::load(ckpt, RuntimeOptions{});

  const int64_t batch = 2, T = 13;
  at::manual_seed(7);
  at::Tensor ids = at::randint(0, c.spec.vocab, {batch, T}, at::kLong);
  at::Tensor full = model->forward(ids);
  ASSERT_EQ(full.sizes(), (std::vector<int64_t>{batch, T, c.spec.vocab}));

  // Prefill 5 tokens, then 1 at a time, then a chunk of the rest.
  KVCache cache = model->new_cache(batch, T);
  std::vector<at::Tensor> parts;
  parts.push_back(model->forward(ids.narrow(1, 0, 5), &cache));
  for (int64_t t = 5; t < 9; ++t) parts.push_back(model->forward(ids.narrow(1, t, 1), &cache));
  parts.push_back(model->forward(ids.narrow(1, 9, T - 9), &cache));
  EXPECT_EQ(cache.length, T);
  at::Tensor incremental = at::cat(parts, 1);
  double max_diff = (incremental - full).abs().max().item<double>();
  EXPECT_LE(max_diff, kCacheTolerance) << c.name;
  EXPECT_TRUE(at::isfinite(full).all().item<bool>());
}

TEST_P(KVCacheTest, LastLogitsAreTheLastRowOfAll) {
  // Generation's prompt asks for the last position's logits only; with and without a cache.
  const Case& c = GetParam();
  const testing::TempDir dir(std::string("fsq-last-") + c.name);
  testing::write_tiny_model(dir.path(), c.spec);
  auto ckpt = Checkpoint::open(dir.path());
  auto model = LlamaModel::load(ckpt, RuntimeOptions{});
  const int64_t batch = 2, T = 11;
  at::manual_seed(3);
  const at::Tensor ids = at::randint(0, c.spec.vocab, {batch, T}, at::kLong);
  const at::Tensor all = model->forward(ids);
  const at::Tensor last = model->forward(ids, nullptr, LlamaModel::Logits::Last);
  ASSERT_EQ(last.sizes(), (std::vector<int64_t>{batch, 1, c.spec.vocab}));
  EXPECT_LE((last.select(1, 0) - all.select(1, T - 1)).abs().max().item<double>(), kCacheTolerance);
  KVCache cache = model->new_cache(batch, T);
  const at::Tensor cached = model->forward(ids, &cache, LlamaModel::Logits::Last);
  EXPECT_EQ(cache.length, T);
  EXPECT_LE((cached.select(1, 0) - all.select(1, T - 1)).abs().max().item<double>(), kCacheTolerance);
}

testing::TinyModelSpec spec_with(int64_t heads, int64_t kv_heads, bool tied, const char* arch = "LlamaForCausalLM",
                                 bool bias = false) {
  testing::TinyModelSpec s;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.tied = tied;
  s.architecture = arch;
  s.attention_bias = bias;
  return s;
}

INSTANTIATE_TEST_SUITE_P(Variants, KVCacheTest,
                         ::testing::Values(Case{"mha_untied", spec_with(4, 4, false)},
                                           Case{"mha_tied", spec_with(4, 4, true)},
                                           Case{"gqa_untied", spec_with(4, 2, false)},
                                           Case{"gqa_tied", spec_with(8, 2, true)},
                                           Case{"mqa", spec_with(4, 1, false)},
                                           Case{"qwen2_bias", spec_with(4, 2, false, "Qwen2ForCausalLM")},
                                           Case{"llama_attention_bias", spec_with(4, 2, true, "LlamaForCausalLM", true)},
                                           Case{"mistral", spec_with(4, 2, false, "MistralForCausalLM")}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(KVCache, OverflowIsAnError) {
  const testing::TempDir scratch("fsq-kv-overflow");
  const auto& dir = scratch.path();
  testing::write_tiny_model(dir, testing::TinyModelSpec{});
  auto model = LlamaModel::load(Checkpoint::open(dir), RuntimeOptions{});
  KVCache cache = model->new_cache(1, 4);
  at::Tensor ids = at::zeros({1, 5}, at::kLong);
  EXPECT_THROW(model->forward(ids, &cache), Error);
}

}  // namespace
}  // namespace fsq
