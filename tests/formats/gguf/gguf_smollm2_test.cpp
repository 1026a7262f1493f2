// The real SmolLM2-135M-Instruct Q4_1 GGUF (fetched by scripts/fetch-model.sh into
// $FSQ_CACHE, default ~/.cache/fsq): header facts from shared/models/MANIFEST.md section 3,
// and every tensor dequantizes to finite values. Skipped when the file is
// absent (failed under CI: FSQ_REQUIRE_FIXTURE).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "formats/gguf/dequantize.h"
#include "formats/gguf/gguf_reader.h"
#include "fixtures.h"

namespace fsq::test {
namespace {

namespace fs = std::filesystem;

constexpr uintmax_t kFileBytes = 98'362'432;
constexpr uint64_t kBlocks = 30, kEmbedding = 576, kFeedForward = 1536, kHeads = 9, kKvHeads = 3;
constexpr uint64_t kContext = 8192, kVocab = 49152, kMerges = 48900;
constexpr double kRopeBase = 100000.0;

class SmolLM2 : public ::testing::Test {
 protected:
  void SetUp() override {
    FSQ_REQUIRE_SMOLLM2();
    path_ = ::fsq::testing::smollm2_gguf();
    file_ = GgufFile::open(path_);
  }
  fs::path path_;
  std::shared_ptr<const GgufFile> file_;
};

TEST_F(SmolLM2, HeaderMatchesManifest) {
  const GgufFile& g = *file_;
  EXPECT_EQ(fs::file_size(path_), kFileBytes);
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.get_string("general.architecture"), "llama");
  EXPECT_EQ(g.get_u64("llama.block_count"), kBlocks);
  EXPECT_EQ(g.get_u64("llama.embedding_length"), kEmbedding);
  EXPECT_EQ(g.get_u64("llama.feed_forward_length"), kFeedForward);
  EXPECT_EQ(g.get_u64("llama.attention.head_count"), kHeads);
  EXPECT_EQ(g.get_u64("llama.attention.head_count_kv"), kKvHeads);
  EXPECT_EQ(g.get_f64("llama.rope.freq_base"), kRopeBase);
  EXPECT_EQ(g.get_u64("llama.context_length"), kContext);
  EXPECT_NEAR(g.get_f64("llama.attention.layer_norm_rms_epsilon"), 1e-5, 1e-12);
  EXPECT_EQ(g.get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(g.get_string("tokenizer.ggml.pre"), "smollm");
  EXPECT_EQ(g.get_strings("tokenizer.ggml.tokens").size(), kVocab);
  EXPECT_EQ(g.get_strings("tokenizer.ggml.merges").size(), kMerges);
  EXPECT_EQ(g.get_strings("tokenizer.ggml.tokens")[1], "<|im_start|>");
  EXPECT_FALSE(g.get_bool("tokenizer.ggml.add_bos_token"));
  EXPECT_EQ(g.get_u64("tokenizer.ggml.bos_token_id"), 1u);
  EXPECT_EQ(g.get_u64("tokenizer.ggml.eos_token_id"), 2u);
}

TEST_F(SmolLM2, TensorTypesAndShapes) {
  const GgufFile& g = *file_;
  EXPECT_EQ(g.tensors().size(), 2 + 9 * kBlocks);  // token_embd, output_norm, 9 per block
  const GgufTensorInfo* embd = g.find_tensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->type, GgmlType::Q8_0);
  EXPECT_EQ(embd->dims, (std::vector<int64_t>{static_cast<int64_t>(kEmbedding), static_cast<int64_t>(kVocab)}));
  EXPECT_EQ(g.find_tensor("output.weight"), nullptr);  // tied to token_embd
  for (const auto& t : g.tensors()) {
    bool is_block_weight = t.name.rfind("blk.", 0) == 0 && t.name.find("_norm") == std::string::npos;
    if (is_block_weight) {
      EXPECT_EQ(t.type, GgmlType::Q4_1) << t.name;
    }
  }
  const GgufTensorInfo* down = g.find_tensor("blk.0.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->shape(), (std::vector<int64_t>{static_cast<int64_t>(kEmbedding), static_cast<int64_t>(kFeedForward)}));
}

TEST_F(SmolLM2, EveryTensorDequantizesToFiniteValues) {
  std::vector<float> buf;
  int64_t total = 0;
  for (const auto& t : file_->tensors()) {
    ASSERT_TRUE(can_dequantize(t.type)) << t.name;
    buf.assign(static_cast<size_t>(t.n_elements), NAN);
    dequantize_row(t.type, t.data, buf.data(), t.n_elements);
    size_t bad = 0;
    double sum_sq = 0;
    for (float x : buf) {
      bad += !std::isfinite(x);
      sum_sq += static_cast<double>(x) * x;
    }
    EXPECT_EQ(bad, 0u) << t.name;
    EXPECT_GT(sum_sq, 0.0) << t.name << " is all zeros";
    total += t.n_elements;
  }
  // 134.5M parameters (the tied head is not stored twice).
  EXPECT_GT(total, 130'000'000);
  EXPECT_LT(total, 140'000'000);
}

}  // namespace
}  // namespace fsq::test
