// GGUF import: a tiny HF checkpoint written out as llama.cpp would (renamed tensors, Q/K
// rows permuted, `llama.*` metadata) must run to the same logits as the original.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstring>

#include "common/error.h"
#include "formats/checkpoint.h"
#include "gguf_builder.h"
#include "runtime/model.h"
#include "runtime/threads.h"
#include "temp_dir.h"
#include "tiny_model.h"

namespace fsq {
namespace {

constexpr double kImportTolerance = 1e-6;  // f32 in, f32 out: only op order may differ

// llama.cpp's convert permutation, written from its definition: view rows as
// [heads, 2, D/2] and swap the last two axes, so GGUF row h*D + 2j + s = HF row h*D + s*D/2 + j.
std::vector<float> permute_like_llama_cpp(const float* w, int64_t rows, int64_t cols, int64_t heads) {
  const int64_t D = rows / heads, half = D / 2;
  std::vector<float> out(static_cast<size_t>(rows * cols));
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t j = 0; j < half; ++j)
      for (int64_t s = 0; s < 2; ++s)
        std::memcpy(&out[(h * D + 2 * j + s) * cols], w + (h * D + s * half + j) * cols, cols * sizeof(float));
  return out;
}

std::string gguf_name(const std::string& hf) {
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  const std::vector<std::pair<std::string, std::string>> parts = {
      {"input_layernorm", "attn_norm"},  {"post_attention_layernorm", "ffn_norm"}, {"self_attn.q_proj", "attn_q"},
      {"self_attn.k_proj", "attn_k"},    {"self_attn.v_proj", "attn_v"},          {"self_attn.o_proj", "attn_output"},
      {"mlp.gate_proj", "ffn_gate"},     {"mlp.up_proj", "ffn_up"},               {"mlp.down_proj", "ffn_down"}};
  std::string rest = hf.substr(std::string("model.layers.").size());
  std::string layer = rest.substr(0, rest.find('.'));
  for (const auto& [from, to] : parts)
    if (rest.find(from) != std::string::npos) return "blk." + layer + "." + to + ".weight";
  ADD_FAILURE() << "unmapped " << hf;
  return hf;
}

// block_count >= 0 overrides the layer count written into the metadata.
std::string write_as_gguf(const Checkpoint& hf, const testing::TinyModelSpec& s, int64_t block_count = -1) {
  using namespace fsq::test;
  GgufBuilder b;
  b.kv("general.architecture", kStr, gstr("llama"));
  b.kv("llama.block_count", kU32, le<uint32_t>(static_cast<uint32_t>(block_count >= 0 ? block_count : s.layers)));
  b.kv("llama.embedding_length", kU32, le<uint32_t>(static_cast<uint32_t>(s.hidden)));
  b.kv("llama.feed_forward_length", kU32, le<uint32_t>(static_cast<uint32_t>(s.intermediate)));
  b.kv("llama.attention.head_count", kU32, le<uint32_t>(static_cast<uint32_t>(s.heads)));
  b.kv("llama.attention.head_count_kv", kU32, le<uint32_t>(static_cast<uint32_t>(s.kv_heads)));
  b.kv("llama.context_length", kU32, le<uint32_t>(static_cast<uint32_t>(s.max_positions)));
  b.kv("llama.attention.layer_norm_rms_epsilon", kF32, le<float>(1e-5f));
  b.kv("llama.rope.freq_base", kF32, le<float>(static_cast<float>(s.rope_theta)));
  for (const TensorView* t : hf.tensors()) {
    const float* w = reinterpret_cast<const float*>(t->data);
    std::vector<float> values(w, w + t->numel());
    const bool q = t->name.find("q_proj") != std::string::npos, k = t->name.find("k_proj") != std::string::npos;
    if (q || k) values = permute_like_llama_cpp(w, t->shape[0], t->shape[1], q ? s.heads : s.kv_heads);
    std::vector<uint64_t> dims(t->shape.rbegin(), t->shape.rend());  // ggml order
    b.tensor(gguf_name(t->name), dims, kGgmlF32,
             std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  }
  return b.bytes();
}

void expect_same_logits(bool tied) {
  testing::TinyModelSpec spec;
  spec.heads = 4;
  spec.kv_heads = 2;
  spec.tied = tied;
  const testing::TempDir scratch("fsq-gguf-model");
  const auto& dir = scratch.path();
  testing::write_tiny_model(dir, spec);
  auto hf = Checkpoint::open(dir);
  test::TempFile gguf("tiny.gguf");
  gguf.write(write_as_gguf(hf, spec));

  auto imported = Checkpoint::open(gguf.path());
  EXPECT_EQ(imported.config().architecture, "LlamaForCausalLM");
  EXPECT_EQ(imported.config().tie_word_embeddings, tied);
  EXPECT_EQ(imported.config().num_kv_heads, spec.kv_heads);
  EXPECT_EQ(imported.tensors().size(), hf.tensors().size());
  set_threads(1);
  auto a = LlamaModel::load(hf, RuntimeOptions{});
  auto b = LlamaModel::load(imported, RuntimeOptions{});
  at::Tensor ids = at::tensor(std::vector<int64_t>{1, 7, 3, 60, 12, 12, 5}, at::kLong).view({1, -1});
  EXPECT_LE((a->forward(ids) - b->forward(ids)).abs().max().item<double>(), kImportTolerance);
}

TEST(GgufModel, UntiedImportMatchesSourceCheckpoint) { expect_same_logits(false); }
TEST(GgufModel, TiedImportMatchesSourceCheckpoint) { expect_same_logits(true); }

// block_count gets the checks num_hidden_layers gets: 0 and a count the tensors do not have
// are refused when the file is opened (convert wrote such folders with exit 0).
TEST(GgufModel, BlockCountMustMatchTheTensors) {
  testing::TinyModelSpec spec;
  const testing::TempDir scratch("fsq-gguf-blocks");
  const auto& dir = scratch.path();
  testing::write_tiny_model(dir, spec);
  auto hf = Checkpoint::open(dir);
  for (const auto& [count, message] : std::vector<std::pair<int64_t, std::string>>{
           {0, "llama.block_count must be positive"},
           {1000, "the config says 1000 decoder layers but the weights hold 2"},
           {1, "the config says 1 decoder layers but the weights hold 2"}}) {
    test::TempFile gguf("blocks.gguf");
    gguf.write(write_as_gguf(hf, spec, count));
    try {
      Checkpoint::open(gguf.path());
      ADD_FAILURE() << "block_count " << count << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("blocks.gguf"), std::string::npos) << e.what();
    }
  }
}

TEST(GgufModel, MissingArchitectureKeyIsNamed) {
  using namespace fsq::test;
  GgufBuilder b;
  b.kv("llama.block_count", kU32, le<uint32_t>(1));
  TempFile f("noarch.gguf");
  f.write(b.bytes());
  try {
    Checkpoint::open(f.path());
    FAIL() << "expected fsq::Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("general.architecture"), std::string::npos) << msg;
    EXPECT_NE(msg.find("noarch.gguf"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos);
  }
}

TEST(GgufModel, UnknownArchitectureListsSupported) {
  using namespace fsq::test;
  GgufBuilder b;
  b.kv("general.architecture", kStr, gstr("mamba"));
  TempFile f("mamba.gguf");
  f.write(b.bytes());
  try {
    Checkpoint::open(f.path());
    FAIL() << "expected fsq::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("supported: llama"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fsq
