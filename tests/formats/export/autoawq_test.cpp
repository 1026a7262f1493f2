// export_autoawq: the exported tensors, decoded by an independent AutoAWQ GEMM decoder,
// give exactly the packed checkpoint's dequantized weights; dense tensors become fp16;
// config.json carries the quantization_config vLLM and transformers read.
#include "formats/export/autoawq.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "autoawq_reference_decoder.h"
#include "common/error.h"
#include "common/half.h"
#include "common/json_file.h"
#include "export_test_support.h"

namespace fsq {
namespace {

using test::TempDir;
namespace fs = std::filesystem;
using json = nlohmann::json;


std::set<std::string> folder_entries(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

using ModelSource = test::SmallModelSource;

class AutoAwqExport : public ::testing::TestWithParam<int64_t> {
 protected:
  TempDir tmp;
  fs::path packed_dir = tmp / "packed";
  fs::path out = tmp / "awq";

  void SetUp() override {
    fs::create_directories(tmp / "source");
    test::write_bytes(tmp / "source" / "tokenizer.json", "{\"model\": {\"type\": \"BPE\"}}\n");
    test::write_bytes(tmp / "source" / "generation_config.json", "{\"do_sample\": false}\n");
  }

  std::string quant_type() const { return "w4g" + std::to_string(GetParam()) + "a"; }
};

TEST_P(AutoAwqExport, LinearsDecodeBitExactlyToTheSourceWeights) {
  ModelSource src(quant_type());
  const PackedCheckpoint packed = src.write(packed_dir);
  export_autoawq(packed, out);

  const auto file = SafetensorsFile::open(out / "model.safetensors");
  ASSERT_EQ(packed.linears().size(), 4u);
  for (const PackedLinear& l : packed.linears()) {
    SCOPED_TRACE(l.name);
    const test::DecodedAwqLinear got = test::decode_autoawq_linear(*file, l.name, GetParam());
    EXPECT_EQ(got.out, l.rows);
    EXPECT_EQ(got.in, l.cols);
    const std::vector<float> expected = dequantize_linear(l);
    ASSERT_EQ(got.weight.size(), expected.size());
    EXPECT_EQ(std::memcmp(got.weight.data(), expected.data(), expected.size() * sizeof(float)), 0);
    EXPECT_EQ(file->find(l.name + ".weight"), nullptr);
  }
}

TEST_P(AutoAwqExport, DenseTensorsBecomeFp16UnderTheirOwnNames) {
  ModelSource src(quant_type());
  const PackedCheckpoint packed = src.write(packed_dir);
  export_autoawq(packed, out);

  const auto file = SafetensorsFile::open(out / "model.safetensors");
  // 5 dense + qweight, qzeros and scales of 4 linears: nothing else.
  EXPECT_EQ(file->tensors().size(), 5u + 3 * 4);
  for (const TensorView* in : packed.dense_tensors()) {
    SCOPED_TRACE(in->name);
    const TensorView* t = file->find(in->name);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->dtype, DType::F16);
    EXPECT_EQ(t->shape, in->shape);
    ASSERT_EQ(t->numel(), in->numel());
    for (int64_t i = 0; i < in->numel(); ++i) {
      float v = 0;
      if (in->dtype == DType::F32) v = test::element<float>(*in, i);
      if (in->dtype == DType::BF16) v = bf16_to_f32(test::element<uint16_t>(*in, i));
      if (in->dtype == DType::F16) v = f16_to_f32(test::element<uint16_t>(*in, i));
      ASSERT_EQ(test::element<uint16_t>(*t, i), f32_to_f16(v)) << "element " << i;
    }
  }
  EXPECT_EQ(file->metadata().at("format"), "pt");
  EXPECT_EQ(file->metadata().at("fsq_source_sha256"), src.ckpt.source_sha256);
}

// A quantized embedding and head (--head-bits) go out dense: their dequantized values in fp16,
// and listed in modules_to_not_convert.
TEST_P(AutoAwqExport, QuantizedEmbeddingAndHeadGoOutDense) {
  ModelSource src(quant_type());
  src.quantize_head("model.embed_tokens", "w8g64s");
  src.quantize_head("lm_head", "w4g32a");
  const PackedCheckpoint packed = src.write(packed_dir);
  ASSERT_EQ(packed.head_matrices().size(), 2u);
  export_autoawq(packed, out);
  const auto file = SafetensorsFile::open(out / "model.safetensors");
  for (const PackedLinear& m : packed.head_matrices()) {
    SCOPED_TRACE(m.name);
    const TensorView* t = file->find(m.name + ".weight");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->dtype, DType::F16);
    EXPECT_EQ(t->shape, (std::vector<int64_t>{m.rows, m.cols}));
    EXPECT_EQ(file->find(m.name + ".qweight"), nullptr);
    const std::vector<float> want = dequantize_linear(m);
    for (int64_t i = 0; i < t->numel(); ++i)
      ASSERT_EQ(test::element<uint16_t>(*t, i), f32_to_f16(want[static_cast<size_t>(i)])) << "element " << i;
  }
  const json config = read_json_file(out / "config.json");
  const auto skipped = config["quantization_config"]["modules_to_not_convert"].get<std::set<std::string>>();
  EXPECT_TRUE(skipped.count("lm_head") && skipped.count("model.embed_tokens"));
}

TEST_P(AutoAwqExport, ConfigCarriesTheAwqQuantizationConfig) {
  ModelSource src(quant_type());
  src.ckpt.tokenizer_dir = tmp / "source";
  const PackedCheckpoint packed = src.write(packed_dir);
  export_autoawq(packed, out);

  json expected = src.ckpt.source_config;
  expected["torch_dtype"] = "float16";
  expected["quantization_config"] = {
      {"quant_method", "awq"},
      {"version", "gemm"},
      {"bits", 4},
      {"group_size", GetParam()},
      {"zero_point", true},
      {"modules_to_not_convert", {"lm_head", "model.embed_tokens", "model.layers.0.mlp.down_proj"}}};
  EXPECT_EQ(read_json_file(out / "config.json"), expected);

  // Tokenizer and generation files copied verbatim; fsq's manifest is not part of an AWQ model.
  EXPECT_EQ(folder_entries(out), (std::set<std::string>{"config.json", "generation_config.json",
                                                        "model.safetensors", "tokenizer.json"}));
  EXPECT_EQ(test::read_bytes(out / "tokenizer.json"), test::read_bytes(tmp / "source" / "tokenizer.json"));
  // No staging folder left beside the output.
  EXPECT_EQ(folder_entries(tmp.path()), (std::set<std::string>{"awq", "packed", "source"}));
}

INSTANTIATE_TEST_SUITE_P(GroupSizes, AutoAwqExport, ::testing::Values(32, 64, 128),
                         [](const auto& info) { return std::to_string(info.param); });

// A hand-made linear whose packed words are worked out by hand from AutoAWQ's order_map
// [0, 2, 4, 6, 1, 3, 5, 7]: nibble i of word j holds output column 8j + order_map[i].
TEST(AutoAwqLayout, WordsMatchAutoAwqPackingOrder) {
  TempDir tmp;
  test::PackedSource src;
  QuantizedMatrix m;
  m.quant = find_uniform_quant("w4g32a");
  m.rows = 8;  // N
  m.cols = 64;  // K: two groups
  m.codes.resize(8 * 64);
  for (int64_t n = 0; n < 8; ++n)
    for (int64_t k = 0; k < 64; ++k) m.codes[n * 64 + k] = static_cast<uint8_t>((n + k) % 16);
  for (int64_t n = 0; n < 8; ++n) {
    m.zeros.insert(m.zeros.end(), {static_cast<uint8_t>(15 - n), static_cast<uint8_t>(n)});
    m.scales.insert(m.scales.end(), {f32_to_f16(0.5f + n), f32_to_f16(-0.25f * n)});
  }
  src.ckpt.linears.push_back({"layer", m, "rtn", {}, std::nullopt});
  export_autoawq(src.write(tmp / "packed"), tmp / "awq");

  const auto file = SafetensorsFile::open(tmp / "awq" / "model.safetensors");
  const TensorView* qweight = file->find("layer.qweight");
  const TensorView* qzeros = file->find("layer.qzeros");
  const TensorView* scales = file->find("layer.scales");
  ASSERT_TRUE(qweight && qzeros && scales);
  EXPECT_EQ(qweight->shape, (std::vector<int64_t>{64, 1}));
  EXPECT_EQ(qzeros->shape, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(scales->shape, (std::vector<int64_t>{2, 8}));
  // Input row 0 holds codes 0..7 for columns 0..7; in nibble order 0,2,4,6,1,3,5,7 that
  // reads, most significant nibble first, 7 5 3 1 6 4 2 0.
  EXPECT_EQ(test::element<uint32_t>(*qweight, 0), 0x75316420u);
  // Input row 9: codes 9..16 mod 16 = 9, 10, .., 15, 0 for columns 0..7.
  EXPECT_EQ(test::element<uint32_t>(*qweight, 9), 0x0ECAFDB9u);
  // Group 0 zeros 15 - n: columns 0..7 = F E D C B A 9 8; group 1 zeros n as row 0.
  EXPECT_EQ(test::element<uint32_t>(*qzeros, 0), 0x8ACE9BDFu);
  EXPECT_EQ(test::element<uint32_t>(*qzeros, 1), 0x75316420u);
  // Scales transposed to [group, output column].
  for (int64_t n = 0; n < 8; ++n) {
    EXPECT_EQ(test::element<uint16_t>(*scales, n), f32_to_f16(0.5f + n)) << n;
    EXPECT_EQ(test::element<uint16_t>(*scales, 8 + n), f32_to_f16(-0.25f * n)) << n;
  }
}

TEST(AutoAwqLayout, ReverseOrderUndoesThePackingOrder) {
  // The decoder's table (AWQ_REVERSE_ORDER) is the inverse of the exporter's (AWQ_ORDER).
  for (int i = 0; i < 8; ++i) EXPECT_EQ(test::kAwqReverseOrder[kAutoAwqNibbleColumn[i]], i);
}

}  // namespace
}  // namespace fsq
