// GGUF writer and `fsq export --format gguf` as a library: files read back through the
// (independently tested) reader with every key and tensor as written; the export's tensor
// types follow llama-quantize's rules, its blocks decode to exactly what the block quantizer
// produced from the source rows, and bad requests are refused before a file exists.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "common/error.h"
#include "formats/export/gguf_awq.h"
#include "formats/export/gguf_export.h"
#include "formats/gguf/dequantize.h"
#include "formats/gguf/gguf_reader.h"
#include "formats/gguf/gguf_writer.h"
#include "formats/gguf/quantize_blocks.h"
#include "gguf_builder.h"

namespace fsq {
namespace {

using namespace fsq::test;

std::string floats(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> v(n);
  for (auto& x : v) x = normal(rng);
  return v;
}

// A llama-shaped source: a tied head (no output.weight), one block whose ffn_down rows of
// 48 are not whole 32-blocks, norms, and metadata of several kinds.
struct Source {
  TempFile file{"source.gguf"};
  std::vector<float> embd = random_floats(10 * 64, 1), q = random_floats(64 * 64, 2), down = random_floats(64 * 48, 3),
                     norm = random_floats(64, 4);
  Source() {
    GgufBuilder b;
    b.kv("general.architecture", kStr, gstr("llama"));
    b.kv("general.alignment", kU32, le<uint32_t>(32));
    b.kv("llama.block_count", kU32, le<uint32_t>(1));
    b.kv("tokenizer.ggml.tokens", kArr, garr(kStr, 2, gstr("a") + gstr("b")));
    b.kv("tokenizer.ggml.scores", kArr, garr(kF32, 2, le<float>(0.5f) + le<float>(-1.0f)));
    b.kv("tokenizer.ggml.add_bos_token", kBool, std::string(1, '\1'));
    b.kv("general.file_type", kU32, le<uint32_t>(0));
    b.kv("quantize.imatrix.file", kStr, gstr("old.dat"));
    b.tensor("token_embd.weight", {64, 10}, kGgmlF32, floats(embd));
    b.tensor("blk.0.attn_norm.weight", {64}, kGgmlF32, floats(norm));
    b.tensor("blk.0.attn_q.weight", {64, 64}, kGgmlF32, floats(q));
    b.tensor("blk.0.ffn_down.weight", {48, 64}, kGgmlF32, floats(down));
    file.write(b.bytes());
  }
};

TEST(GgufWriter, WritesWhatTheReaderReadsBack) {
  Source src_file;
  auto src = GgufFile::open(src_file.file.path());
  GgufWriter w;
  for (const auto& [k, v] : src->metadata()) w.set(k, v);
  w.set("general.file_type", GgufValue{uint32_t{2}});  // replaced in place
  w.set("fsq.note", GgufValue{std::string("hello")});
  w.add_tensor({"a", {64, 2}, GgmlType::F32});
  w.add_tensor({"b", {32, 3}, GgmlType::Q8_0});
  TempFile out("written.gguf");
  w.write(out.path(), [&](size_t i, std::span<std::byte> dst) {
    for (size_t j = 0; j < dst.size(); ++j) dst[j] = static_cast<std::byte>((j * 7 + i) & 0x7F);
  });

  auto back = GgufFile::open(out.path());
  ASSERT_EQ(back->metadata().size(), src->metadata().size() + 1);
  EXPECT_EQ(back->metadata()[6].first, "general.file_type");  // kept its place
  EXPECT_EQ(back->get_u64("general.file_type"), 2u);
  EXPECT_EQ(back->get_string("fsq.note"), "hello");
  EXPECT_EQ(back->get_strings("tokenizer.ggml.tokens"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(back->get_f64s("tokenizer.ggml.scores"), (std::vector<double>{0.5, -1.0}));
  EXPECT_TRUE(back->get_bool("tokenizer.ggml.add_bos_token"));
  ASSERT_EQ(back->tensors().size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const auto& t = back->tensors()[i];
    EXPECT_EQ(t.offset % 32, 0u);
    ASSERT_EQ(t.nbytes, w.tensor_bytes(i));
    for (size_t j = 0; j < t.nbytes; ++j) ASSERT_EQ(t.data[j], static_cast<std::byte>((j * 7 + i) & 0x7F));
  }
  EXPECT_EQ(back->tensors()[1].type, GgmlType::Q8_0);
}

TEST(GgufWriter, RefusesTensorsThatAreNotWholeBlocks) {
  GgufWriter w;
  EXPECT_THROW(w.add_tensor({"x", {48, 2}, GgmlType::Q4_0}), Error);
  w.add_tensor({"x", {64, 2}, GgmlType::Q4_0});
  EXPECT_THROW(w.add_tensor({"x", {64, 2}, GgmlType::Q4_0}), Error);  // twice
}

TEST(GgufExport, FollowsLlamaQuantizeTypeRules) {
  Source s;
  auto src = GgufFile::open(s.file.path());
  GgufExportPlan plan = plan_gguf_export(*src, GgufRecipe::Q4_0, false);
  ASSERT_EQ(plan.tensors.size(), 4u);
  EXPECT_EQ(plan.tensors[0].to, GgmlType::Q8_0);  // tied head: Q6_K -> Q8_0 (64 is not a 256-block)
  EXPECT_EQ(plan.tensors[1].to, GgmlType::F32);   // norm
  EXPECT_EQ(plan.tensors[2].to, GgmlType::Q4_0);
  EXPECT_EQ(plan.tensors[3].to, GgmlType::F16);   // rows of 48
  EXPECT_FALSE(plan.tensors[3].note.empty());
}

TEST(GgufExport, Iq4NlGivesTheFirstEighthOfFfnDownMoreBitsWithoutImportance) {
  GgufBuilder b;
  b.kv("general.architecture", kStr, gstr("llama"));
  b.kv("llama.block_count", kU32, le<uint32_t>(8));
  b.tensor("blk.0.ffn_down.weight", {256, 2}, kGgmlF32, floats(random_floats(512, 6)));
  b.tensor("blk.1.ffn_down.weight", {256, 2}, kGgmlF32, floats(random_floats(512, 7)));
  b.tensor("blk.0.attn_v.weight", {64, 2}, kGgmlF32, floats(random_floats(128, 8)));
  TempFile file("eighth.gguf");
  file.write(b.bytes());
  auto src = GgufFile::open(file.path());
  GgufExportPlan plain = plan_gguf_export(*src, GgufRecipe::IQ4_NL, false);
  EXPECT_EQ(plain.tensors[0].to, GgmlType::Q5_K);
  EXPECT_EQ(plain.tensors[1].to, GgmlType::IQ4_NL);
  EXPECT_EQ(plan_gguf_export(*src, GgufRecipe::IQ4_NL, true).tensors[0].to, GgmlType::IQ4_NL);
  // Q4_0 with an importance matrix guards the first eighth of ffn_down with Q4_1.
  EXPECT_EQ(plan_gguf_export(*src, GgufRecipe::Q4_0, true).tensors[0].to, GgmlType::Q4_1);
  EXPECT_EQ(plan_gguf_export(*src, GgufRecipe::Q4_0, false).tensors[0].to, GgmlType::Q4_0);
  // --pure: no mix rules.
  EXPECT_EQ(plan_gguf_export(*src, GgufRecipe::IQ4_NL, false, true).tensors[0].to, GgmlType::IQ4_NL);
  // Q4_K_M: attn_v of a "more bits" layer is Q6_K, which 64-wide rows cannot hold: Q8_0.
  EXPECT_EQ(plan_gguf_export(*src, GgufRecipe::Q4_K_M, false).tensors[2].to, GgmlType::Q8_0);
}

TEST(GgufRecipe, MatchesLlamaQuantizeMixes) {
  auto type = [](GgufRecipe r, const std::string& name, int64_t layer, int64_t cols = 1536) {
    return gguf_recipe_type(r, GgufTensorRole{name, cols, layer, 30, 3, false, false, false});
  };
  // Q4_K_M over 30 layers: more bits (Q6_K) in layers < 3, >= 26 and every third from 5.
  for (int64_t i = 0; i < 30; ++i) {
    const bool more = i < 3 || i >= 26 || (i - 3) % 3 == 2;
    EXPECT_EQ(type(GgufRecipe::Q4_K_M, "blk." + std::to_string(i) + ".ffn_down.weight", i),
              more ? GgmlType::Q6_K : GgmlType::Q4_K)
        << i;
  }
  EXPECT_EQ(type(GgufRecipe::Q4_K_M, "blk.4.ffn_up.weight", 4), GgmlType::Q4_K);
  EXPECT_EQ(type(GgufRecipe::Q4_K_M, "blk.4.ffn_up.weight", 4, 576), GgmlType::Q5_0);  // not whole 256-blocks
  EXPECT_EQ(type(GgufRecipe::Q3_K_M, "blk.1.attn_v.weight", 1), GgmlType::Q5_K);
  EXPECT_EQ(type(GgufRecipe::Q3_K_M, "blk.2.attn_v.weight", 2), GgmlType::Q4_K);
  EXPECT_EQ(type(GgufRecipe::Q3_K_M, "blk.2.attn_output.weight", 2), GgmlType::Q4_K);
  EXPECT_EQ(type(GgufRecipe::Q3_K_M, "blk.2.ffn_up.weight", 2, 576), GgmlType::Q4_0);
  EXPECT_EQ(type(GgufRecipe::Q2_K, "blk.2.ffn_down.weight", 2), GgmlType::Q3_K);
  EXPECT_EQ(*parse_gguf_recipe("q4_k"), GgufRecipe::Q4_K_M);
  EXPECT_FALSE(parse_gguf_recipe("Q4_K_L").has_value());
}

TEST(GgufExport, BlocksDecodeToTheQuantizerOutputOfTheSourceRows) {
  Source s;
  auto src = GgufFile::open(s.file.path());
  for (GgufRecipe recipe : {GgufRecipe::Q4_0, GgufRecipe::IQ4_NL, GgufRecipe::Q5_1}) {
    const GgmlType type = gguf_recipe_info(recipe).base;
    std::vector<float> importance = random_floats(64, 9);
    for (auto& v : importance) v = v * v;
    GgufExportOptions options;
    options.threads = 3;
    options.importance = [&](const std::string& name, int64_t cols) {
      return name == "blk.0.attn_q.weight" && cols == 64 ? importance : std::vector<float>{};
    };
    TempFile out("exported.gguf");
    GgufExportReport report = export_gguf(*src, plan_gguf_export(*src, recipe, true), out.path(), options);
    EXPECT_TRUE(report.plan.tensors[2].weighted);
    EXPECT_FALSE(report.plan.tensors[0].weighted);

    auto back = GgufFile::open(out.path());
    EXPECT_EQ(back->get_u64("general.file_type"), gguf_recipe_info(recipe).file_type);
    EXPECT_EQ(back->get_strings("tokenizer.ggml.tokens"), src->get_strings("tokenizer.ggml.tokens"));
    EXPECT_EQ(back->find("quantize.imatrix.file"), nullptr);  // the source's quantization, not this file's
    EXPECT_EQ(report.file_bytes, std::filesystem::file_size(out.path()));

    const GgufTensorInfo* q = back->find_tensor("blk.0.attn_q.weight");
    ASSERT_NE(q, nullptr);
    ASSERT_EQ(q->type, type);
    std::vector<float> got(64), want(64);
    std::vector<std::byte> bytes(*ggml_nbytes(type, 64));
    for (int r = 0; r < 64; ++r) {
      dequantize_row(type, q->data + r * bytes.size(), got.data(), 64);
      quantize_row_gguf(type, std::span<const float>(s.q.data() + r * 64, 64), importance, bytes, want);
      ASSERT_EQ(0, std::memcmp(got.data(), want.data(), sizeof(float) * 64)) << "row " << r;
    }
    const GgufTensorInfo* down = back->find_tensor("blk.0.ffn_down.weight");
    std::vector<float> f16_row(48);
    dequantize_row(GgmlType::F16, down->data, f16_row.data(), 48);
    for (int i = 0; i < 48; ++i) EXPECT_NEAR(f16_row[i], s.down[i], std::max(std::fabs(s.down[i]) * 0x1p-11f, 0x1p-25f));  // fp16 rounding
    const GgufTensorInfo* norm = back->find_tensor("blk.0.attn_norm.weight");
    EXPECT_EQ(0, std::memcmp(norm->data, s.norm.data(), 64 * sizeof(float)));
  }
}

// A layer with both norm-fed groups and skewed per-channel activation energy.
TEST(GgufAwq, ScalesLowerTheErrorEstimateAndFoldExactlyIntoTheNorms) {
  GgufBuilder b;
  b.kv("general.architecture", kStr, gstr("llama"));
  b.kv("llama.block_count", kU32, le<uint32_t>(1));
  std::vector<float> attn_norm = random_floats(64, 11), ffn_norm = random_floats(64, 12);
  b.tensor("blk.0.attn_norm.weight", {64}, kGgmlF32, floats(attn_norm));
  b.tensor("blk.0.attn_q.weight", {64, 64}, kGgmlF32, floats(random_floats(64 * 64, 13)));
  b.tensor("blk.0.attn_k.weight", {64, 32}, kGgmlF32, floats(random_floats(64 * 32, 14)));
  b.tensor("blk.0.attn_v.weight", {64, 32}, kGgmlF32, floats(random_floats(64 * 32, 15)));
  b.tensor("blk.0.ffn_norm.weight", {64}, kGgmlF32, floats(ffn_norm));
  b.tensor("blk.0.ffn_gate.weight", {64, 96}, kGgmlF32, floats(random_floats(64 * 96, 16)));
  b.tensor("blk.0.ffn_up.weight", {64, 96}, kGgmlF32, floats(random_floats(64 * 96, 17)));
  TempFile file("awq.gguf");
  file.write(b.bytes());
  auto src = GgufFile::open(file.path());
  std::mt19937 rng(18);
  std::lognormal_distribution<float> energy(0.0f, 2.0f);
  std::vector<float> c(64);
  for (auto& v : c) v = energy(rng);
  auto importance = [&](const std::string&, int64_t cols) { return cols == 64 ? c : std::vector<float>{}; };
  const GgufExportPlan plan = plan_gguf_export(*src, GgufRecipe::Q4_0, true);
  const GgufAwqScales awq = search_gguf_awq_scales(*src, plan, importance, 2);
  ASSERT_EQ(awq.report.size(), 2u);
  bool scaled = false;
  for (const auto& g : awq.report) {
    EXPECT_LE(g["error"].get<double>(), g["error_unscaled"].get<double>());
    scaled = scaled || g["alpha"].get<double>() > 0;
  }
  EXPECT_TRUE(scaled) << awq.report.dump();

  GgufExportOptions options;
  options.importance = importance;
  options.column_scale = awq.column_scale;
  options.norm_divisor = awq.norm_divisor;
  TempFile out("awq-out.gguf");
  export_gguf(*src, plan, out.path(), options);
  auto back = GgufFile::open(out.path());
  for (const auto& [name, original] : {std::pair{std::string("blk.0.attn_norm.weight"), attn_norm},
                                       std::pair{std::string("blk.0.ffn_norm.weight"), ffn_norm}}) {
    auto it = awq.norm_divisor.find(name);
    if (it == awq.norm_divisor.end()) continue;
    std::vector<float> got(64);
    dequantize_row(GgmlType::F32, back->find_tensor(name)->data, got.data(), 64);
    for (int j = 0; j < 64; ++j) ASSERT_EQ(got[j], original[j] / it->second[j]) << name << " " << j;
  }
}

TEST(GgufExport, RefusesBeforeWriting) {
  {
    Source s;  // every matrix is 64 wide: no Q4_K block (256) fits a row
    auto src = GgufFile::open(s.file.path());
    EXPECT_THROW(plan_gguf_export(*src, GgufRecipe::Q4_K_M, false), Error);
  }
  // A source with no matrix whose rows are whole blocks.
  GgufBuilder b;
  b.kv("general.architecture", kStr, gstr("llama"));
  b.tensor("blk.0.ffn_down.weight", {48, 2}, kGgmlF32, floats(random_floats(96, 5)));
  TempFile odd("odd.gguf");
  odd.write(b.bytes());
  auto odd_src = GgufFile::open(odd.path());
  try {
    plan_gguf_export(*odd_src, GgufRecipe::Q4_0, false);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no weight matrix"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fsq
