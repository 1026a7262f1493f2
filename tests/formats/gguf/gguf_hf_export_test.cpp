// fsq export --format gguf from a Hugging Face folder, as a library: an F32 export read back
// by fsq's own GGUF importer (which undoes llama.cpp's q/k row permutation) holds every
// tensor of the folder bit for bit and runs to the same logits; the tokenizer metadata is
// what llama.cpp's converter wrote for the real SmolLM2 (its GGUF is the reference); the
// float and block types follow convert_hf_to_gguf.py --outtype and llama-quantize.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstring>

#include "common/half.h"
#include "fixtures.h"
#include "formats/checkpoint.h"
#include "formats/export/gguf_export.h"
#include "formats/export/gguf_hf_metadata.h"
#include "formats/export/gguf_hf_source.h"
#include "formats/gguf/dequantize.h"
#include "formats/gguf/gguf_reader.h"
#include "formats/tokenizer.h"
#include "runtime/model.h"
#include "runtime/threads.h"
#include "temp_dir.h"
#include "tiny_model.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;

// F32 in, F32 out, the same runtime on the same numbers: nothing may differ.
constexpr double kSameWeightsLogits = 0.0;

fs::path export_folder(const fs::path& hf, GgufRecipe recipe, const fs::path& out) {
  HfFolderSource source(hf);
  const GgufExportPlan plan = plan_gguf_export(source, recipe, false);
  GgufExportOptions options;
  options.threads = 2;
  export_gguf(source, plan, out, options);
  return out;
}

// Every tensor of the folder, widened to f32, equals the imported GGUF's bit for bit.
void expect_same_tensors(const Checkpoint& hf, const Checkpoint& imported) {
  ASSERT_EQ(hf.tensors().size(), imported.tensors().size());
  for (const TensorView* t : hf.tensors()) {
    const TensorView* back = imported.find(t->name);
    ASSERT_NE(back, nullptr) << t->name;
    ASSERT_EQ(back->shape, t->shape) << t->name;
    std::vector<float> want(static_cast<size_t>(t->numel()));
    decode_float_elements(t->dtype, t->data, want.data(), t->numel(), t->name);
    ASSERT_EQ(std::memcmp(want.data(), back->data, want.size() * 4), 0) << t->name << " differs";
  }
}

void expect_same_logits(const Checkpoint& a, const Checkpoint& b, std::vector<int64_t> ids) {
  set_threads(1);
  auto ma = LlamaModel::load(a, RuntimeOptions{});
  auto mb = LlamaModel::load(b, RuntimeOptions{});
  at::Tensor x = at::tensor(ids, at::kLong).view({1, -1});
  EXPECT_LE((ma->forward(x) - mb->forward(x)).abs().max().item<double>(), kSameWeightsLogits);
}

struct TinyCase {
  const char* name;
  testing::TinyModelSpec spec;
};

void PrintTo(const TinyCase& c, std::ostream* os) { *os << c.name; }

class GgufHfExportTiny : public ::testing::TestWithParam<TinyCase> {};

TEST_P(GgufHfExportTiny, F32RoundTripIsBitExact) {
  const testing::TempDir scratch("fsq-gguf-hf-tiny");
  const auto& dir = scratch.path();
  testing::write_tiny_model(dir / "hf", GetParam().spec);
  const fs::path out = export_folder(dir / "hf", GgufRecipe::F32, dir / "tiny.gguf");
  const Checkpoint hf = Checkpoint::open(dir / "hf");
  const Checkpoint imported = Checkpoint::open(out);
  expect_same_tensors(hf, imported);
  expect_same_logits(hf, imported, {1, 7, 3, 60, 12, 12, 5});
}

testing::TinyModelSpec tiny(const char* arch, bool tied, bool bias) {
  testing::TinyModelSpec s;
  s.architecture = arch;
  s.tied = tied;
  s.attention_bias = bias;
  return s;
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, GgufHfExportTiny,
    ::testing::Values(TinyCase{"llama_untied", tiny("LlamaForCausalLM", false, false)},
                      TinyCase{"llama_tied", tiny("LlamaForCausalLM", true, false)},
                      // q/k biases are permuted like their rows
                      TinyCase{"llama_biases", tiny("LlamaForCausalLM", false, true)},
                      TinyCase{"mistral", tiny("MistralForCausalLM", false, false)},
                      TinyCase{"qwen2_biases", tiny("Qwen2ForCausalLM", true, false)}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(GgufHfExport, Stories260kF32RoundTripAndMetadata) {
  FSQ_REQUIRE_SHARED("models/stories260K/model.safetensors");
  const testing::TempDir scratch("fsq-gguf-hf-stories");
  const auto& dir = scratch.path();
  const fs::path out = export_folder(testing::stories260k_dir(), GgufRecipe::F32, dir / "stories.gguf");
  const Checkpoint hf = Checkpoint::open(testing::stories260k_dir());
  const Checkpoint imported = Checkpoint::open(out);
  expect_same_tensors(hf, imported);
  expect_same_logits(hf, imported, {1, 403, 407, 261, 378, 9, 2, 300, 511, 0});

  auto g = GgufFile::open(out);
  for (const char* key : {"general.architecture", "general.name", "general.type", "general.size_label",
                          "general.file_type", "general.quantization_version", "llama.block_count",
                          "llama.context_length", "llama.embedding_length", "llama.feed_forward_length",
                          "llama.attention.head_count", "llama.attention.head_count_kv", "llama.rope.freq_base",
                          "llama.attention.layer_norm_rms_epsilon", "llama.vocab_size", "llama.rope.dimension_count",
                          "tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens",
                          "tokenizer.ggml.scores", "tokenizer.ggml.token_type", "tokenizer.ggml.bos_token_id",
                          "tokenizer.ggml.eos_token_id", "tokenizer.ggml.add_bos_token"})
    EXPECT_NE(g->find(key), nullptr) << key;
  EXPECT_EQ(g->get_string("general.architecture"), "llama");
  EXPECT_EQ(g->get_string("general.size_label"), "260K");
  EXPECT_EQ(g->get_u64("general.file_type"), 0u);
  EXPECT_EQ(g->get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(g->get_u64("tokenizer.ggml.bos_token_id"), 1u);
  EXPECT_EQ(g->get_u64("tokenizer.ggml.eos_token_id"), 2u);
  EXPECT_TRUE(g->get_bool("tokenizer.ggml.add_bos_token"));
  // <unk>, <s>, </s>, then the byte pieces, as SentencePiece types them.
  const std::vector<int64_t> types = g->get_i64s("tokenizer.ggml.token_type");
  ASSERT_EQ(types.size(), 512u);
  EXPECT_EQ(std::vector<int64_t>(types.begin(), types.begin() + 4), (std::vector<int64_t>{2, 3, 3, 6}));
  // The GGUF's tokenizer encodes (single-spaced) text as the folder's tokenizer.model does.
  const std::string text = "Once upon a time, there was a little girl named Lily. She liked to play.";
  EXPECT_EQ(load_gguf_tokenizer(*g)->encode_default(text),
            load_tokenizer(testing::stories260k_dir())->encode_default(text));
}

// llama.cpp's converter wrote the SmolLM2 GGUF that fetch-model.sh fetches; fsq's folder
// made from it (fsq convert) exports to the same tokenizer keys.
TEST(GgufHfExport, Smollm2TokenizerKeysMatchLlamaCppsConverter) {
  FSQ_REQUIRE_SMOLLM2();
  FSQ_REQUIRE_SMOLLM2_HF();
  const HfFolderSource source(testing::smollm2_hf());
  auto reference = GgufFile::open(testing::smollm2_gguf());
  for (const char* key : {"tokenizer.ggml.model", "tokenizer.ggml.pre"})
    EXPECT_EQ(std::get<std::string>(source.find(key)->v), reference->get_string(key)) << key;
  auto array_of = [&](const char* key) { return std::get<GgufArray>(source.find(key)->v); };
  EXPECT_EQ(array_of("tokenizer.ggml.tokens").strings(), reference->get_strings("tokenizer.ggml.tokens"));
  EXPECT_EQ(array_of("tokenizer.ggml.merges").strings(), reference->get_strings("tokenizer.ggml.merges"));
  EXPECT_EQ(array_of("tokenizer.ggml.token_type").to_i64(), reference->get_i64s("tokenizer.ggml.token_type"));
  for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"})
    EXPECT_EQ(std::get<uint32_t>(source.find(key)->v), reference->get_u64(key)) << key;
  EXPECT_EQ(std::get<bool>(source.find("tokenizer.ggml.add_bos_token")->v),
            reference->get_bool("tokenizer.ggml.add_bos_token"));
  for (const char* key : {"llama.block_count", "llama.context_length", "llama.embedding_length",
                          "llama.feed_forward_length", "llama.attention.head_count", "llama.attention.head_count_kv",
                          "llama.vocab_size", "llama.rope.dimension_count"})
    EXPECT_EQ(std::get<uint32_t>(source.find(key)->v), reference->get_u64(key)) << key;
  EXPECT_EQ(std::get<std::string>(source.find("general.size_label")->v), reference->get_string("general.size_label"));
}

// --type F16 / BF16 round each weight to nearest-even in that type, 1-D tensors stay F32;
// block types follow llama-quantize's rules (the tied embedding is the output head).
TEST(GgufHfExport, Stories260kTypes) {
  FSQ_REQUIRE_SHARED("models/stories260K/model.safetensors");
  const testing::TempDir scratch("fsq-gguf-hf-types");
  const auto& dir = scratch.path();
  const Checkpoint hf = Checkpoint::open(testing::stories260k_dir());
  for (GgufRecipe r : {GgufRecipe::F16, GgufRecipe::BF16}) {
    const fs::path out = export_folder(testing::stories260k_dir(), r, dir / "float.gguf");
    const Checkpoint imported = Checkpoint::open(out);
    auto g = GgufFile::open(out);
    EXPECT_EQ(g->get_u64("general.file_type"), gguf_recipe_info(r).file_type);
    for (const GgufTensorInfo& t : g->tensors())
      EXPECT_EQ(t.type, t.dims.size() == 1 ? GgmlType::F32 : gguf_recipe_info(r).base) << t.name;
    for (const TensorView* t : hf.tensors()) {
      const float* want = reinterpret_cast<const float*>(t->data);
      const float* got = reinterpret_cast<const float*>(imported.find(t->name)->data);
      const bool vector = t->shape.size() == 1;
      for (int64_t i = 0; i < t->numel(); ++i) {
        const float rounded = vector ? want[i]
                              : r == GgufRecipe::F16 ? f16_to_f32(f32_to_f16(want[i]))
                                                     : bf16_to_f32(f32_to_bf16(want[i]));
        ASSERT_EQ(got[i], rounded) << t->name << "[" << i << "]";
      }
    }
  }
  for (GgufRecipe r : {GgufRecipe::Q8_0, GgufRecipe::Q4_0}) {
    const fs::path out = export_folder(testing::stories260k_dir(), r, dir / "blocks.gguf");
    auto g = GgufFile::open(out);
    EXPECT_EQ(g->get_u64("general.file_type"), gguf_recipe_info(r).file_type);
    for (const GgufTensorInfo& t : g->tensors()) {
      if (t.dims.size() == 1) {
        EXPECT_EQ(t.type, GgmlType::F32) << t.name;
      } else if (t.name == "token_embd.weight") {  // the tied head: Q8_0 stays, Q4_0 asks Q6_K, 64 columns get Q8_0
        EXPECT_EQ(t.type, GgmlType::Q8_0) << t.name;
      } else if (t.dims[0] % 32 != 0) {  // ffn_down's 172 columns: F16, as llama-quantize falls back
        EXPECT_EQ(t.type, GgmlType::F16) << t.name;
      } else {
        EXPECT_EQ(t.type, gguf_recipe_info(r).base) << t.name;
      }
    }
  }
}

TEST(GgufHfExport, SizeLabelsAsTheConverterRoundsThem) {
  EXPECT_EQ(gguf_size_label(260032), "260K");
  EXPECT_EQ(gguf_size_label(134515008), "135M");
  EXPECT_EQ(gguf_size_label(6738415616), "6.7B");
  EXPECT_EQ(gguf_size_label(13015864320), "13B");
}

}  // namespace
}  // namespace fsq
