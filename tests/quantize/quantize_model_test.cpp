// The quantize pipeline on tiny random models: RTN equals the scalar reference, group-size
// fallback, dry runs and the memory limit, and resuming after an interruption.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <fstream>

#include "common/error.h"
#include "formats/checkpoint.h"
#include "formats/packed_checkpoint.h"
#include "folder_digest.h"
#include "pipeline_fixture.h"
#include "quantize/quantize_model.h"
#include "runtime/model_files.h"
#include "runtime/threads.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;
using test::Fixture;
using test::lines_of;
using test::mentions;

using testing::folder_digest;

TEST(QuantizePipeline, RtnEqualsTheScalarReferenceOnEveryLinear) {
  set_threads(1);
  Fixture fx("rtn");
  QuantizeSummary summary;
  lines_of(fx.config("out"), &summary);
  EXPECT_FALSE(fs::exists(fx.dir / "out.partial"));
  Checkpoint src = Checkpoint::open(fx.model);
  PackedCheckpoint packed = PackedCheckpoint::open(fx.dir / "out");
  ASSERT_EQ(packed.linears().size(), 3u * 7u);
  for (const PackedLinear& l : packed.linears()) {
    const TensorView& w = src.get(l.name + ".weight");
    const QuantizedMatrix ref = quantize_uniform(reinterpret_cast<const float*>(w.data), w.shape[0], w.shape[1], {4, 32, false});
    std::vector<float> want(static_cast<size_t>(w.numel()));
    dequantize_uniform(ref, want.data());
    EXPECT_EQ(dequantize_linear(l), want) << l.name;
    EXPECT_EQ(l.method, "rtn");
    EXPECT_EQ(l.quant_type, "w4g32a");
  }
  // Norms are carried over unchanged by RTN.
  for (const char* name : {"model.layers.1.input_layernorm.weight", "model.norm.weight"}) {
    const TensorView* got = nullptr;
    for (const TensorView* v : packed.dense_tensors())
      if (v->name == name) got = v;
    ASSERT_NE(got, nullptr) << name;
    const TensorView& want = src.get(name);
    ASSERT_EQ(got->nbytes, want.nbytes);
    EXPECT_EQ(std::memcmp(got->data, want.data, want.nbytes), 0) << name;
  }
  // The embedding and the (untied) head: RTN into w8g64s by default (--head-bits 8).
  ASSERT_EQ(packed.head_matrices().size(), 2u);
  for (const char* name : {"lm_head", "model.embed_tokens"}) {
    const PackedLinear* m = packed.find_head_matrix(name);
    ASSERT_NE(m, nullptr) << name;
    EXPECT_EQ(m->quant_type, "w8g64s");
    const TensorView& w = src.get(std::string(name) + ".weight");
    const QuantizedMatrix ref = quantize_uniform(reinterpret_cast<const float*>(w.data), w.shape[0], w.shape[1], {8, 64, true});
    std::vector<float> want(static_cast<size_t>(w.numel()));
    dequantize_uniform(ref, want.data());
    EXPECT_EQ(dequantize_linear(*m), want) << name;
  }
  // The plan counted them: predicted output within 1 % of the file's tensor bytes.
  int64_t stored = 0;
  for (const TensorView* t : packed.weights().tensors()) stored += static_cast<int64_t>(t->nbytes);
  EXPECT_EQ(summary.plan.head_type, "w8g64s");
  EXPECT_NEAR(static_cast<double>(summary.plan.output_bytes), static_cast<double>(stored), 0.01 * stored);
}

// --head-bits 16 keeps the embedding and head as in the source; 4 stores them as w4g32a. The
// runtime's lookup of a quantized embedding is the dequantized row, exactly.
TEST(QuantizePipeline, HeadBitsChooseHowTheEmbeddingAndHeadAreStored) {
  set_threads(1);
  Fixture fx("head-bits");
  Checkpoint src = Checkpoint::open(fx.model);
  auto dense = fx.config("h16");
  dense.head_bits = 16;
  lines_of(dense);
  const PackedCheckpoint h16 = PackedCheckpoint::open(dense.out);
  EXPECT_TRUE(h16.head_matrices().empty());
  EXPECT_EQ(h16.manifest().count(kPackedHeadKey), 0u);
  bool embedding_dense = false;
  for (const TensorView* v : h16.dense_tensors())
    if (v->name == "model.embed_tokens.weight")
      embedding_dense = std::memcmp(v->data, src.get(v->name).data, v->nbytes) == 0;
  EXPECT_TRUE(embedding_dense);

  auto four = fx.config("h4");
  four.head_bits = 4;
  lines_of(four);
  const PackedCheckpoint h4 = PackedCheckpoint::open(four.out);
  ASSERT_NE(h4.find_head_matrix("model.embed_tokens"), nullptr);
  EXPECT_EQ(h4.find_head_matrix("model.embed_tokens")->quant_type, "w4g32a");
  EXPECT_EQ(h4.manifest()["run_options"]["head_bits"], 4);

  const ModelFiles files = ModelFiles::open(four.out);
  const auto model = files.load(RuntimeOptions{});
  const at::Tensor ids = at::tensor(std::vector<int64_t>{3, 0, 511, 3}, at::kLong).view({2, 2});
  const at::Tensor rows = model->embed(ids);
  const std::vector<float> table = dequantize_linear(*h4.find_head_matrix("model.embed_tokens"));
  const int64_t H = model->config().hidden_size;
  for (int64_t i = 0; i < 4; ++i) {
    const int64_t id = ids.view({-1})[i].item<int64_t>();
    const at::Tensor want = at::from_blob(const_cast<float*>(table.data()) + id * H, {H}, at::kFloat);
    EXPECT_TRUE(at::equal(rows.view({4, H})[i], want)) << "token " << id;
  }
  EXPECT_NE(model->matmul_kinds().count("lm_head: w4g32a rtn"), 0u);
}

TEST(QuantizePipeline, GroupSizeThatDoesNotDivideFallsBack) {
  Fixture fx("fallback", /*intermediate=*/72);
  auto cfg = fx.config("out");
  cfg.quant.group_size = 64;
  auto lines = lines_of(cfg);
  EXPECT_TRUE(mentions(lines, "use w4pca")) << lines.front();
  PackedCheckpoint packed = PackedCheckpoint::open(fx.dir / "out");
  EXPECT_EQ(packed.find_linear("model.layers.0.mlp.down_proj")->quant_type, "w4pca");  // 72 columns
  EXPECT_EQ(packed.find_linear("model.layers.0.mlp.up_proj")->quant_type, "w4g64a");   // 64 columns
}

TEST(QuantizePipeline, DryRunWritesNothingAndTheMemoryLimitRefuses) {
  Fixture fx("plan");
  auto cfg = fx.config("out");
  cfg.dry_run = true;
  auto lines = lines_of(cfg);
  EXPECT_TRUE(mentions(lines, "predicted peak memory"));
  EXPECT_FALSE(fs::exists(fx.dir / "out"));
  cfg.dry_run = false;
  cfg.max_memory = 1024 * 1024;  // 1 MiB: below the runtime's own footprint
  try {
    lines_of(cfg);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--max-memory"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(fx.dir / "out"));
  EXPECT_FALSE(fs::exists(fx.dir / "out.partial"));
}

TEST(QuantizePipeline, ResumedRunWritesTheSameBytesAndChangedOptionsStartOver) {
  FSQ_REQUIRE_SHARED("models/stories260K/tokenizer.model");
  set_threads(1);
  Fixture fx("resume", 96, /*tokenizer=*/true);
  lines_of(fx.config("whole", "awq"));

  auto interrupted = fx.config("resumed", "awq");
  interrupted.stop_after_layers = 2;
  EXPECT_THROW(lines_of(interrupted), Error);
  EXPECT_FALSE(fs::exists(fx.dir / "resumed"));
  EXPECT_TRUE(fs::exists(fx.dir / "resumed.partial" / "layer_00001.safetensors"));
  QuantizeSummary summary;
  auto lines = lines_of(fx.config("resumed", "awq"), &summary);
  EXPECT_TRUE(mentions(lines, "resuming from"));
  EXPECT_EQ(summary.resumed_layers, 2);
  EXPECT_EQ(folder_digest(fx.dir / "resumed"), folder_digest(fx.dir / "whole"));

  // A different calibration seed invalidates the saved layers.
  auto changed = fx.config("changed", "awq");
  changed.stop_after_layers = 1;
  EXPECT_THROW(lines_of(changed), Error);
  changed.stop_after_layers = -1;
  changed.draw.seed = 4;
  lines = lines_of(changed, &summary);
  EXPECT_TRUE(mentions(lines, "starting over")) << lines.back();
  EXPECT_TRUE(mentions(lines, "calibration"));
  EXPECT_EQ(summary.resumed_layers, 0);

  // Layers saved by another fsq build are not mixed into this one's checkpoint.
  auto other_build = fx.config("other-build", "awq");
  other_build.producer = {{"name", "fsq"}, {"version", "0.0.1"}, {"commit", "1234567"}};
  other_build.stop_after_layers = 1;
  EXPECT_THROW(lines_of(other_build), Error);
  other_build.stop_after_layers = -1;
  other_build.producer["commit"] = "89abcde";
  lines = lines_of(other_build, &summary);
  EXPECT_TRUE(mentions(lines, "the producer differs")) << lines.back();
  EXPECT_EQ(summary.resumed_layers, 0);
  EXPECT_EQ(PackedCheckpoint::open(other_build.out).manifest()["producer"], other_build.producer);
}

// SqueezeLLM with GPTQ runs calibration windows for its Hessians (no Fisher pass: unweighted,
// no sensitive part): a resumed run replays the saved layers to rebuild the later layers'
// inputs and writes the same bytes, and the codes differ from the nearest ones.
TEST(QuantizePipeline, SqueezeLlmGptqResumesToTheSameBytes) {
  FSQ_REQUIRE_SHARED("models/stories260K/tokenizer.model");
  set_threads(1);
  Fixture fx("lut-gptq", 96, /*tokenizer=*/true);
  auto config = [&](const std::string& out, bool gptq) {
    QuantizeConfig c = fx.config(out, "awq");  // awq's calibration settings
    c.method = "squeezellm";
    c.quant.bits = 3;
    c.lut.weighted = false;
    c.lut.sensitive_pct = 0;
    c.pass_options.gptq = gptq;
    return c;
  };
  lines_of(config("whole", true));
  lines_of(config("nearest", false));
  auto interrupted = config("resumed", true);
  interrupted.stop_after_layers = 1;
  EXPECT_THROW(lines_of(interrupted), Error);
  QuantizeSummary summary;
  lines_of(config("resumed", true), &summary);
  EXPECT_EQ(summary.resumed_layers, 1);
  EXPECT_EQ(folder_digest(fx.dir / "resumed"), folder_digest(fx.dir / "whole"));
  EXPECT_NE(folder_digest(fx.dir / "nearest"), folder_digest(fx.dir / "whole"));
  EXPECT_EQ(PackedCheckpoint::open(fx.dir / "whole").manifest()["run_options"]["weights"], "gptq");
}

// Layer 0 sees the embeddings either way; later layers are calibrated on the outputs of the
// quantized layers before them unless fp inputs are asked for (AutoAWQ's choice).
TEST(QuantizePipeline, QuantizedLayerInputsChangeOnlyLaterLayers) {
  FSQ_REQUIRE_SHARED("models/stories260K/tokenizer.model");
  set_threads(1);
  Fixture fx("layer-inputs", 96, /*tokenizer=*/true);
  auto quantized = fx.config("quantized", "awq");
  quantized.quant = UniformQuant{2, 32, false};  // large rounding error: the inputs differ clearly
  auto fp = quantized;
  fp.out = fx.dir / "fp";
  fp.quantized_inputs = false;
  lines_of(quantized);
  lines_of(fp);
  const PackedCheckpoint a = PackedCheckpoint::open(quantized.out), b = PackedCheckpoint::open(fp.out);
  auto bytes = [](const PackedCheckpoint& c, const std::string& name) {
    const TensorView* t = c.weights().find(name);
    EXPECT_NE(t, nullptr) << name;
    return t ? std::string(reinterpret_cast<const char*>(t->data), t->nbytes) : std::string();
  };
  for (const char* role : {"self_attn.q_proj", "mlp.down_proj"}) {
    const std::string name = std::string(".") + role + ".scales";
    EXPECT_EQ(bytes(a, "model.layers.0" + name), bytes(b, "model.layers.0" + name)) << role;
    EXPECT_NE(bytes(a, "model.layers.2" + name), bytes(b, "model.layers.2" + name)) << role;
  }
}

}  // namespace
}  // namespace fsq
