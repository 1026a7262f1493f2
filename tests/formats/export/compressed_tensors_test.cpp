// export_compressed_tensors: the exported tensors, decoded here the way compressed-tensors
// documents pack-quantized (signed codes and zero points offset by 2^(bits-1), one LSB-first
// bit stream per row, zero points streamed down the output dimension), give exactly the
// packed checkpoint's dequantized weights for every width, group size and symmetry; the
// config groups, targets and ignore list are what vLLM and transformers match on; what the
// layout cannot hold is refused before anything is written. The same export was checked
// against compressed-tensors' own code by scripts/check-compressed-tensors.sh.
#include "formats/export/compressed_tensors.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "common/error.h"
#include "common/half.h"
#include "common/json_file.h"
#include "export_test_support.h"

namespace fsq {
namespace {

using test::TempDir;
namespace fs = std::filesystem;
using json = nlohmann::json;

// Value `index` of a stream of `bits`-wide values packed LSB first into 32-bit words.
int64_t stream_value(const int32_t* words, int64_t index, int bits) {
  int64_t v = 0;
  for (int b = 0; b < bits; ++b) {
    const int64_t bit = index * bits + b;
    v |= static_cast<int64_t>((static_cast<uint32_t>(words[bit / 32]) >> (bit % 32)) & 1u) << b;
  }
  return v;
}

template <typename T>
std::vector<T> values_of(const TensorView& t) {
  std::vector<T> v(t.nbytes / sizeof(T));
  std::memcpy(v.data(), t.data, t.nbytes);
  return v;
}

// The weights [rows, cols] compressed-tensors decodes from the exported tensors of `name`:
// w = (q - z) * scale with q, z the signed values (stored value - 2^(bits-1)).
std::vector<float> decode_exported(const SafetensorsFile& f, const std::string& name, int bits, bool symmetric) {
  const TensorView* shape = f.find(name + ".weight_shape");
  const TensorView* packed = f.find(name + ".weight_packed");
  const TensorView* scale = f.find(name + ".weight_scale");
  EXPECT_TRUE(shape && packed && scale) << name;
  EXPECT_EQ(shape->dtype, DType::I64);
  const std::vector<int64_t> dims = values_of<int64_t>(*shape);
  const int64_t rows = dims.at(0), cols = dims.at(1), groups = scale->shape.at(1);
  EXPECT_EQ(packed->shape, (std::vector<int64_t>{rows, (cols * bits + 31) / 32}));
  EXPECT_EQ(scale->shape.at(0), rows);
  std::vector<float> scales(static_cast<size_t>(rows * groups));
  if (scale->dtype == DType::F16) {
    const std::vector<uint16_t> h = values_of<uint16_t>(*scale);
    for (size_t i = 0; i < h.size(); ++i) scales[i] = f16_to_f32(h[i]);
  } else {
    scales = values_of<float>(*scale);
  }
  const int64_t offset = int64_t{1} << (bits - 1);
  const std::vector<int32_t> words = values_of<int32_t>(*packed);
  const TensorView* zp = f.find(name + ".weight_zero_point");
  EXPECT_EQ(zp == nullptr, symmetric) << name;
  std::vector<int32_t> zp_words;
  if (zp != nullptr) {
    EXPECT_EQ(zp->shape, (std::vector<int64_t>{(rows * bits + 31) / 32, groups}));
    // [words, groups] row-major: column g is the bit stream of group g down the rows.
    const std::vector<int32_t> by_word = values_of<int32_t>(*zp);
    const int64_t w = zp->shape[0];
    zp_words.resize(by_word.size());
    for (int64_t i = 0; i < w; ++i)
      for (int64_t g = 0; g < groups; ++g) zp_words[g * w + i] = by_word[i * groups + g];
  }
  std::vector<float> out(static_cast<size_t>(rows * cols));
  const int64_t words_per_row = packed->shape[1];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t g = c / (cols / groups);
      const int64_t q = stream_value(words.data() + r * words_per_row, c, bits) - offset;
      const int64_t z = symmetric ? 0 : stream_value(zp_words.data() + g * zp->shape[0], r, bits) - offset;
      out[r * cols + c] = static_cast<float>(q - z) * scales[r * groups + g];
    }
  return out;
}

constexpr int64_t kHidden = test::kExportHidden;

// Quantized linears of `type` (up_proj of `mlp_type`) beside dense tensors of every dtype.
struct CompressedSource : test::SmallModelSource {
  explicit CompressedSource(const std::string& type, const std::string& mlp_type = "")
      : SmallModelSource(type, kHidden, mlp_type) {}
};

class CompressedTensorsExport : public ::testing::TestWithParam<std::string> {
 protected:
  TempDir tmp;
  fs::path packed_dir = tmp / "packed";
  fs::path out = tmp / "ct";

  void SetUp() override {
    fs::create_directories(tmp / "source");
    test::write_bytes(tmp / "source" / "tokenizer.json", "{\"model\": {\"type\": \"BPE\"}}\n");
  }
};

TEST_P(CompressedTensorsExport, LinearsDecodeBitExactlyToTheSourceWeights) {
  CompressedSource src(GetParam());
  const PackedCheckpoint packed = src.write(packed_dir);
  export_compressed_tensors(packed, out, {.dtype = DType::F32});
  const auto file = SafetensorsFile::open(out / "model.safetensors");
  ASSERT_EQ(packed.linears().size(), 4u);
  for (const PackedLinear& l : packed.linears()) {
    SCOPED_TRACE(l.name);
    const std::vector<float> got = decode_exported(*file, l.name, l.quant.bits, l.quant.symmetric);
    const std::vector<float> expected = dequantize_linear(l);
    ASSERT_EQ(got.size(), expected.size());
    EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)), 0);
    EXPECT_EQ(file->find(l.name + ".weight"), nullptr);
  }
}

// A quantized embedding and head (--head-bits) go out dense: float32 holds their dequantized
// values exactly; nothing quantized is left of them.
TEST_P(CompressedTensorsExport, QuantizedEmbeddingAndHeadGoOutDense) {
  CompressedSource src(GetParam());
  src.quantize_head("model.embed_tokens", "w8g64s");
  src.quantize_head("lm_head", "w4g32a");
  const PackedCheckpoint packed = src.write(packed_dir);
  export_compressed_tensors(packed, out, {.dtype = DType::F32});
  const auto file = SafetensorsFile::open(out / "model.safetensors");
  ASSERT_EQ(packed.head_matrices().size(), 2u);
  for (const PackedLinear& m : packed.head_matrices()) {
    SCOPED_TRACE(m.name);
    const TensorView* t = file->find(m.name + ".weight");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->dtype, DType::F32);
    const std::vector<float> want = dequantize_linear(m);
    ASSERT_EQ(t->nbytes, want.size() * sizeof(float));
    EXPECT_EQ(std::memcmp(t->data, want.data(), t->nbytes), 0);
    EXPECT_EQ(file->find(m.name + ".weight_packed"), nullptr);
  }
}

TEST_P(CompressedTensorsExport, Float16KeepsFsqsScalesAndRoundsDenseTensors) {
  CompressedSource src(GetParam());
  src.ckpt.tokenizer_dir = tmp / "source";
  const PackedCheckpoint packed = src.write(packed_dir);
  export_compressed_tensors(packed, out);  // float16 is the default
  const auto file = SafetensorsFile::open(out / "model.safetensors");
  for (const PackedLinear& l : packed.linears()) {
    const TensorView* scale = file->find(l.name + ".weight_scale");
    ASSERT_NE(scale, nullptr);
    EXPECT_EQ(scale->dtype, DType::F16);
    ASSERT_EQ(scale->nbytes, l.scales->nbytes);
    EXPECT_EQ(std::memcmp(scale->data, l.scales->data, scale->nbytes), 0) << l.name;
  }
  for (const TensorView* t : packed.dense_tensors()) {
    const TensorView* got = file->find(t->name);
    ASSERT_NE(got, nullptr) << t->name;
    EXPECT_EQ(got->dtype, DType::F16) << t->name;
    EXPECT_EQ(got->shape, t->shape) << t->name;
  }
  EXPECT_EQ(read_json_file((out / "config.json").string())["torch_dtype"], "float16");
  EXPECT_EQ(test::read_bytes(out / "tokenizer.json"), test::read_bytes(tmp / "source" / "tokenizer.json"));
}

TEST_P(CompressedTensorsExport, ConfigGroupTargetsEveryQuantizedLinearByName) {
  CompressedSource src(GetParam());
  const PackedCheckpoint packed = src.write(packed_dir);
  const CompressedTensorsReport report = export_compressed_tensors(packed, out);
  EXPECT_EQ(report.schemes, std::vector<std::string>{GetParam()});
  const json config = read_json_file((out / "config.json").string());
  const json& qc = config.at("quantization_config");
  EXPECT_EQ(qc.at("quant_method"), "compressed-tensors");
  EXPECT_EQ(qc.at("format"), "pack-quantized");
  EXPECT_EQ(qc.at("quantization_status"), "compressed");
  ASSERT_EQ(qc.at("config_groups").size(), 1u);
  const json& group = qc.at("config_groups").at("group_0");
  const UniformQuant& q = find_uniform_quant(GetParam());
  EXPECT_EQ(group.at("targets"), json({"model.layers.0.mlp.up_proj", "model.layers.0.self_attn.k_proj",
                                       "model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.v_proj"}));
  const json& w = group.at("weights");
  EXPECT_EQ(w.at("num_bits"), q.bits);
  EXPECT_EQ(w.at("type"), "int");
  EXPECT_EQ(w.at("symmetric"), q.symmetric);
  EXPECT_EQ(w.at("strategy"), q.group_size == 0 ? "channel" : "group");
  EXPECT_EQ(w.at("group_size"), q.group_size == 0 ? json(nullptr) : json(q.group_size));
  EXPECT_TRUE(group.at("input_activations").is_null());
  // vLLM refuses a linear that no group targets unless it is ignored.
  EXPECT_EQ(qc.at("ignore"), json({"lm_head", "model.layers.0.mlp.down_proj"}));
}

INSTANTIATE_TEST_SUITE_P(QuantTypes, CompressedTensorsExport,
                         ::testing::Values("w4g32a", "w4g128s", "w3g64a", "w2g32s", "w8pca", "w8g64s"),
                         [](const auto& info) { return info.param; });

bool has_note(const CompressedTensorsReport& r, const std::string& text) {
  return std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return n.find(text) != n.npos; });
}

TEST(CompressedTensorsMixed, OneConfigGroupPerSchemeAndNotesForTheEngines) {
  TempDir tmp;
  CompressedSource src("w4g64s", "w3g64s");
  const PackedCheckpoint packed = src.write(tmp / "packed");
  const CompressedTensorsReport report = export_compressed_tensors(packed, tmp / "ct");
  EXPECT_EQ(report.linears, 4);
  EXPECT_EQ(report.schemes, (std::vector<std::string>{"w3g64s", "w4g64s"}));
  const json groups = read_json_file((tmp / "ct" / "config.json").string())["quantization_config"]["config_groups"];
  EXPECT_EQ(groups["group_0"]["targets"], json({"model.layers.0.mlp.up_proj"}));
  EXPECT_EQ(groups["group_0"]["weights"]["num_bits"], 3);
  EXPECT_EQ(groups["group_1"]["targets"].size(), 3u);
  ASSERT_EQ(report.notes.size(), 1u) << report.notes[0];  // symmetric, q/k/v agree: only vLLM's widths
  EXPECT_TRUE(has_note(report, "w3g64s: vLLM's compressed-tensors kernels take 4 and 8 bits only"));

  // k_proj at 8 bits: vLLM cannot fuse q/k/v, and transformers' dequantize route (the only
  // one for asymmetric layers) would decode it with the first group's scheme.
  TempDir tmp2;
  CompressedSource split("w4g64a");
  split.ckpt.linears[1] = {"model.layers.0.self_attn.k_proj",
                           quantize_uniform(test::gaussian(16, kHidden, 9).data(), 16, kHidden,
                                            find_uniform_quant("w8g64a")),
                           "rtn", {}, std::nullopt};
  const CompressedTensorsReport r2 = export_compressed_tensors(split.write(tmp2 / "packed"), tmp2 / "ct");
  EXPECT_EQ(r2.notes.size(), 2u);
  EXPECT_TRUE(has_note(r2, "model.layers.0.self_attn: q/k/v have different schemes"));
  EXPECT_TRUE(has_note(r2, "asymmetric with several schemes"));

  TempDir tmp3;
  CompressedSource asym("w4g64a");
  const CompressedTensorsReport r3 = export_compressed_tensors(asym.write(tmp3 / "packed"), tmp3 / "ct");
  EXPECT_EQ(r3.notes.size(), 1u);
  EXPECT_TRUE(has_note(r3, "CompressedTensorsConfig(dequantize=True)"));
}

class CompressedTensorsRefusal : public ::testing::Test {
 protected:
  TempDir tmp;
  fs::path packed_dir = tmp / "packed";
  fs::path out = tmp / "ct";

  void expect_refused(test::PackedSource& src, const std::string& problem) {
    test::expect_export_refused([&](const PackedCheckpoint& p) { export_compressed_tensors(p, out); }, src,
                                tmp.path(), packed_dir, problem);
  }
};

void add_exportable_linear(test::PackedSource& src) { src.add_linear("model.layers.0.mlp.up_proj", "w4g32a", 16, 64, 1); }

TEST_F(CompressedTensorsRefusal, LookupTableCodes) {
  test::PackedSource src;
  add_exportable_linear(src);
  LutMatrix lut;
  lut.bits = 4;
  lut.rows = 8;
  lut.cols = 32;
  lut.codes.assign(8 * 32, 3);
  lut.lut.assign(8 * 16, f32_to_f16(0.5f));
  src.ckpt.linears.push_back({"model.layers.0.mlp.gate_proj", {}, "squeezellm", {}, lut});
  expect_refused(src, "linear 'model.layers.0.mlp.gate_proj' (lut4) cannot be exported as compressed-tensors: its "
                      "codes index per-row lookup tables");
}

TEST_F(CompressedTensorsRefusal, ActivationQuantization) {
  test::PackedSource src;
  add_exportable_linear(src);
  const std::vector<float> w = test::gaussian(16, 64, 3);
  src.ckpt.linears.push_back({"model.layers.0.mlp.gate_proj", quantize_uniform(w.data(), 16, 64, kW8A8Weights),
                              "smoothquant", {}, std::nullopt, ActivationQuant::PerToken, 0.0f});
  expect_refused(src, "(w8a8) cannot be exported as compressed-tensors: it quantizes activations at run time");
}

TEST_F(CompressedTensorsRefusal, NothingQuantized) {
  test::PackedSource src;
  src.add_dense("model.norm.weight", DType::F32, {4}, std::vector<float>(4, 1.0f));
  expect_refused(src, "has no quantized linear");
}

TEST_F(CompressedTensorsRefusal, DenseTensorBeyondFp16ButNotFp32) {
  test::PackedSource src;
  add_exportable_linear(src);
  src.add_dense("model.norm.weight", DType::F32, {3}, std::vector<float>{1.0f, 1e6f, 1.0f});
  expect_refused(src, "tensor 'model.norm.weight': element 1 is not finite in fp16");
  const PackedCheckpoint packed = PackedCheckpoint::open(packed_dir);
  export_compressed_tensors(packed, out, {.dtype = DType::F32});
  EXPECT_TRUE(fs::is_regular_file(out / "model.safetensors"));
}

TEST_F(CompressedTensorsRefusal, BusyDestinationIsLeftAlone) {
  test::PackedSource src;
  add_exportable_linear(src);
  const PackedCheckpoint packed = src.write(packed_dir);
  fs::create_directories(out);
  test::write_bytes(out / "keep.txt", "mine");
  EXPECT_THROW(export_compressed_tensors(packed, out), Error);
  EXPECT_EQ(test::read_bytes(out / "keep.txt"), "mine");
}

}  // namespace
}  // namespace fsq
