// Packed checkpoint round trip: write a small directory, open it, and get back exactly the
// codes, scales and zeros that went in (dequantized weights bit-equal to the reference).
#include "formats/packed_checkpoint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

#include "common/error.h"
#include "common/half.h"
#include "common/json_file.h"
#include "formats/quant/bitpack.h"
#include "formats/quant/quant_types.h"
#include "quant/packed_test_support.h"

namespace fsq {
namespace {

using test::TempDir;
namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr int64_t kHidden = 64;
constexpr int64_t kVocab = 16;
const char* const kLayer = "model.layers.0.";

// The source checkpoint a quantizer would hand to the writer. Owns the dense tensors'
// bytes so the TensorToWrite spans stay valid.
struct Source {
  std::vector<float> embed = test::gaussian(kVocab, kHidden, 1);
  std::vector<float> norm = std::vector<float>(kHidden, 1.0f);
  std::vector<float> q_bias = test::gaussian(1, kHidden, 2);
  PackedCheckpointToWrite ckpt;

  Source() {
    ckpt.source_config = json::parse(test::llama_config());
    ckpt.dense = {
        {"model.embed_tokens.weight", DType::F32, {kVocab, kHidden}, test::as_bytes(embed)},
        {"model.norm.weight", DType::F32, {kHidden}, test::as_bytes(norm)},
        {std::string(kLayer) + "self_attn.q_proj.bias", DType::F32, {kHidden}, test::as_bytes(q_bias)}};
    // One linear per bit width, mixing group sizes, symmetry, and a per-channel row of 40
    // columns whose packed row does not fill whole words.
    add("self_attn.q_proj", "w4g32a", kHidden, kHidden, 3);
    add("self_attn.k_proj", "w3g64s", 16, kHidden, 4);
    add("self_attn.v_proj", "w2pca", 16, 40, 5);
    add("self_attn.o_proj", "w8g32s", kHidden, 32, 6);
    ckpt.calibration = {{"dataset", "tinystories"}, {"samples", 8}, {"seed", 1}};
    ckpt.source_sha256 = std::string(64, 'a');
  }

  void add(const std::string& name, const std::string& type, int64_t rows, int64_t cols, uint32_t seed) {
    ckpt.linears.push_back({kLayer + name,
                            test::quantized(rows, cols, find_uniform_quant(type), seed),
                            "rtn",
                            {{"seed", seed}},
                            std::nullopt});
  }
};

class PackedCheckpointTest : public ::testing::Test {
 protected:
  TempDir tmp;
  Source src;
  fs::path out = tmp / "packed";

  void SetUp() override {
    fs::create_directories(tmp / "source");
    test::write_bytes(tmp / "source" / "tokenizer.json", "{\"model\": {}}\n");
    test::write_bytes(tmp / "source" / "tokenizer_config.json", "{\"add_bos_token\": true}\n");
    src.ckpt.tokenizer_dir = tmp / "source";
  }
};

TEST_F(PackedCheckpointTest, RoundTripIsBitExact) {
  write_packed_checkpoint(src.ckpt, out);
  const PackedCheckpoint c = PackedCheckpoint::open(out);

  ASSERT_EQ(c.linears().size(), src.ckpt.linears.size());
  for (const QuantizedLinearToWrite& in : src.ckpt.linears) {
    SCOPED_TRACE(in.name);
    const PackedLinear* l = c.find_linear(in.name);
    ASSERT_NE(l, nullptr);
    EXPECT_EQ(l->quant_type, uniform_quant_name(in.matrix.quant));
    EXPECT_EQ(l->rows, in.matrix.rows);
    EXPECT_EQ(l->cols, in.matrix.cols);
    EXPECT_EQ(l->method, "rtn");
    EXPECT_EQ(l->options, in.options);
    EXPECT_EQ(l->qzeros != nullptr, !in.matrix.quant.symmetric);

    const QuantizedMatrix back = unpack_linear(*l);
    EXPECT_EQ(back.codes, in.matrix.codes);
    EXPECT_EQ(back.scales, in.matrix.scales);
    EXPECT_EQ(back.zeros, in.matrix.zeros);

    std::vector<float> expected(static_cast<size_t>(in.matrix.rows * in.matrix.cols));
    dequantize_uniform(in.matrix, expected.data());
    const std::vector<float> got = dequantize_linear(*l);
    ASSERT_EQ(got.size(), expected.size());
    EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)), 0);

    // qweight holds exactly the documented bit stream.
    const std::vector<uint32_t> words =
        pack_rows(in.matrix.codes, in.matrix.rows, in.matrix.cols, in.matrix.quant.bits);
    ASSERT_EQ(l->qweight->nbytes, words.size() * sizeof(uint32_t));
    EXPECT_TRUE(test::same_bytes(l->qweight->data, std::as_bytes(std::span<const uint32_t>(words))));
  }
  EXPECT_EQ(c.find_linear("model.layers.0.mlp.up_proj"), nullptr);
  EXPECT_EQ(c.find_linear(std::string(kLayer) + "self_attn.q_proj")->bias->name,
            std::string(kLayer) + "self_attn.q_proj.bias");
  EXPECT_EQ(c.find_linear(std::string(kLayer) + "self_attn.k_proj")->bias, nullptr);

  // Dense tensors come back as given, and nothing else is dense.
  std::set<std::string> dense_names;
  for (const TensorView* t : c.dense_tensors()) dense_names.insert(t->name);
  std::set<std::string> given;
  for (const TensorToWrite& t : src.ckpt.dense) {
    given.insert(t.name);
    const TensorView* v = c.weights().find(t.name);
    ASSERT_NE(v, nullptr) << t.name;
    EXPECT_EQ(v->dtype, t.dtype);
    EXPECT_EQ(v->shape, t.shape);
    EXPECT_TRUE(v->nbytes == t.data.size() && test::same_bytes(v->data, t.data)) << t.name;
  }
  EXPECT_EQ(dense_names, given);
}

// A LUT matrix with every code, centroid and CSR entry drawn from `seed`; `nnz_per_row`
// sparse corrections in each row (0: no sparse part).
LutMatrix lut_matrix(int bits, int64_t rows, int64_t cols, int64_t nnz_per_row, uint32_t seed) {
  LutMatrix m;
  m.bits = bits;
  m.rows = rows;
  m.cols = cols;
  uint32_t state = seed * 2654435761u + 1;
  auto next = [&] { return state = state * 1664525u + 1013904223u; };
  for (int64_t i = 0; i < rows * cols; ++i) m.codes.push_back(static_cast<uint8_t>(next() >> 28) % m.levels());
  for (int64_t i = 0; i < rows * m.levels(); ++i)
    m.lut.push_back(f32_to_f16(static_cast<float>(static_cast<int32_t>(next() >> 16) - 32768) / 65536.0f));
  if (nnz_per_row == 0) return m;
  m.row_ptr.push_back(0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < nnz_per_row; ++j) {
      m.col.push_back(static_cast<int32_t>(j * (cols / nnz_per_row) + static_cast<int64_t>(next() % (cols / nnz_per_row))));
      m.val.push_back(f32_to_f16(static_cast<float>(next() >> 20) / 256.0f));
    }
    m.row_ptr.push_back(static_cast<int32_t>(m.col.size()));
  }
  return m;
}

// A sparse part that is present but holds no entries: row pointers all 0, sparse_col and
// sparse_val of shape [0] (fuzz_packed's lut_csr_nnz0 seed; unpacking it once passed null
// pointers to memcpy).
LutMatrix empty_sparse_part(LutMatrix m) {
  m.row_ptr.assign(static_cast<size_t>(m.rows + 1), 0);
  return m;
}

TEST_F(PackedCheckpointTest, LutLinearsRoundTripWithTheirSparseParts) {
  src.ckpt.linears.clear();
  const std::vector<std::pair<std::string, LutMatrix>> luts = {
      {"mlp.gate_proj", lut_matrix(4, 48, kHidden, 3, 1)},  // columns stored as U16
      {"mlp.up_proj", lut_matrix(3, 48, 40, 0, 2)},          // dense only, rows not filling words
      {"mlp.down_proj", lut_matrix(3, 2, 70000, 2, 3)},      // columns past 65535: I32
      {"self_attn.o_proj", empty_sparse_part(lut_matrix(4, 3, kHidden, 0, 4))}};  // nnz = 0
  for (const auto& [name, m] : luts) src.ckpt.linears.push_back({kLayer + name, {}, "squeezellm", {}, m});
  write_packed_checkpoint(src.ckpt, out);
  const PackedCheckpoint c = PackedCheckpoint::open(out);
  for (const auto& [name, in] : luts) {
    SCOPED_TRACE(name);
    const PackedLinear* l = c.find_linear(kLayer + name);
    ASSERT_NE(l, nullptr);
    EXPECT_TRUE(l->is_lut());
    EXPECT_EQ(l->quant_type, in.bits == 4 ? "lut4" : "lut3");
    EXPECT_EQ(l->scales, nullptr);
    EXPECT_EQ(l->sparse_row_ptr != nullptr, in.has_sparse());
    if (in.has_sparse()) {
      EXPECT_EQ(l->sparse_col->dtype, in.cols <= 65536 ? DType::U16 : DType::I32);
    }
    const LutMatrix back = unpack_lut_linear(*l);
    EXPECT_EQ(back.codes, in.codes);
    EXPECT_EQ(back.lut, in.lut);
    EXPECT_EQ(back.row_ptr, in.row_ptr);
    EXPECT_EQ(back.col, in.col);
    EXPECT_EQ(back.val, in.val);
    std::vector<float> expected(static_cast<size_t>(in.rows * in.cols));
    dequantize_lut(in, expected.data());
    const std::vector<float> got = dequantize_linear(*l);
    EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)), 0);
    EXPECT_THROW(unpack_linear(*l), Error);
  }
  EXPECT_EQ(read_json_file(out / kPackedConfigFile)["quantization_config"]["quant_types"],
            json::array({"lut3", "lut4"}));
}

TEST(LutQuant, DequantizeAddsTheSparseCorrectionsAndBitsCountEveryByte) {
  LutMatrix m = lut_matrix(4, 2, 8, 1, 9);
  std::vector<float> w(16);
  dequantize_lut(m, w.data());
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 8; ++c) {
      float expected = f16_to_f32(m.lut[r * 16 + m.codes[r * 8 + c]]);
      if (c == m.col[r]) expected += f16_to_f32(m.val[r]);
      EXPECT_EQ(w[r * 8 + c], expected) << r << "," << c;
    }
  // 4 code bits + 16 fp16 centroids over 8 columns + (2 nonzeros x 32 bits + 3 row pointers x 32) / 16 weights.
  EXPECT_DOUBLE_EQ(lut_bits_per_weight(4, 2, 8, 2), 4.0 + (2 * 16 * 16 + 2 * 32 + 3 * 32) / 16.0);
  LutMatrix past_nnz = m;  // row 0 claims 100 nonzeros of 2: refused before they are read
  past_nnz.row_ptr = {0, 100, 2};
  try {
    validate_lut_matrix(past_nnz, "test");
    ADD_FAILURE() << "a row pointer past nnz was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the 2 nonzeros"), std::string::npos) << e.what();
  }
  m.col[1] = 8;
  EXPECT_THROW(validate_lut_matrix(m, "test"), Error);
}

TEST_F(PackedCheckpointTest, ConfigManifestAndSideFiles) {
  write_packed_checkpoint(src.ckpt, out);
  const PackedCheckpoint c = PackedCheckpoint::open(out);

  json expected_config = src.ckpt.source_config;
  expected_config["quantization_config"] = {{"quant_method", "fsq"},
                                            {"format_version", kPackedFormatVersion},
                                            {"manifest", "fsq.json"},
                                            {"quant_types", {"w2pca", "w3g64s", "w4g32a", "w8g32s"}}};
  EXPECT_EQ(c.config(), expected_config);
  EXPECT_EQ(c.manifest()["format_version"], kPackedFormatVersion);
  EXPECT_EQ(c.manifest()["source_sha256"], src.ckpt.source_sha256);
  EXPECT_EQ(c.manifest()["calibration"], src.ckpt.calibration);
  EXPECT_FALSE(c.manifest().contains("run_options"));  // optional: absent when not given
  EXPECT_FALSE(c.manifest().contains("producer"));
  EXPECT_EQ(c.manifest()["linears"][std::string(kLayer) + "self_attn.v_proj"]["shape"], json({16, 40}));
  // Every tensor is hashed: 3 dense, qweight + scales for 4 linears, qzeros for the 2 asym ones.
  EXPECT_EQ(c.weights().tensors().size(), 3u + 4 * 2 + 2);
  EXPECT_EQ(c.manifest()["tensor_sha256"].size(), c.weights().tensors().size());

  EXPECT_EQ(test::read_bytes(out / "tokenizer.json"), test::read_bytes(tmp / "source" / "tokenizer.json"));
  EXPECT_EQ(test::read_bytes(out / "tokenizer_config.json"),
            test::read_bytes(tmp / "source" / "tokenizer_config.json"));
  EXPECT_FALSE(fs::exists(out / "tokenizer.model"));  // absent in the source

  // Only the two folders remain: no staging folder or temporary file is left behind.
  std::set<std::string> siblings;
  for (const auto& e : fs::directory_iterator(tmp.path())) siblings.insert(e.path().filename().string());
  EXPECT_EQ(siblings, (std::set<std::string>{"packed", "source"}));
  std::set<std::string> files;
  for (const auto& e : fs::directory_iterator(out)) files.insert(e.path().filename().string());
  EXPECT_EQ(files, (std::set<std::string>{"config.json", "fsq.json", "model.safetensors", "tokenizer.json",
                                          "tokenizer_config.json"}));
}

TEST_F(PackedCheckpointTest, RunOptionsAndProducerAreStoredVerbatim) {
  src.ckpt.run_options = {{"method", "awq"}, {"layer_inputs", "fp"}, {"search_tokens", 100}};
  src.ckpt.producer = {{"name", "fsq"}, {"version", "0.1.0"}, {"commit", "e4e4dc6"}};
  write_packed_checkpoint(src.ckpt, out);
  const PackedCheckpoint c = PackedCheckpoint::open(out);
  EXPECT_EQ(c.manifest()["run_options"], src.ckpt.run_options);
  EXPECT_EQ(c.manifest()["producer"], src.ckpt.producer);
}

TEST_F(PackedCheckpointTest, WritesIntoAnEmptyFolderButNeverOverAFullOne) {
  fs::create_directories(out);
  write_packed_checkpoint(src.ckpt, out);
  EXPECT_NO_THROW(PackedCheckpoint::open(out));
  try {
    write_packed_checkpoint(src.ckpt, out);
    FAIL() << "overwrote a checkpoint";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("exists and is not empty"), std::string::npos) << e.what();
  }
}

TEST_F(PackedCheckpointTest, TrailingSlashNamesTheFolderItself) {
  write_packed_checkpoint(src.ckpt, tmp / "packed/");
  EXPECT_NO_THROW(PackedCheckpoint::open(out));
  EXPECT_EQ(std::distance(fs::directory_iterator(tmp.path()), fs::directory_iterator()),
            2);  // source, packed
}

TEST_F(PackedCheckpointTest, InvalidInputLeavesNothingBehind) {
  auto expect_rejected = [&](const PackedCheckpointToWrite& bad, const std::string& problem) {
    try {
      write_packed_checkpoint(bad, out);
      ADD_FAILURE() << "accepted: " << problem;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(problem), std::string::npos) << e.what();
    }
    EXPECT_EQ(std::distance(fs::directory_iterator(tmp.path()), fs::directory_iterator()), 1)  // only source/
        << problem;
  };
  PackedCheckpointToWrite clash = src.ckpt;
  clash.dense.push_back(
      {std::string(kLayer) + "self_attn.q_proj.weight", DType::F32, {kHidden}, test::as_bytes(src.norm)});
  expect_rejected(clash, "clashes with a quantized linear");

  PackedCheckpointToWrite twice = src.ckpt;
  twice.linears.push_back(twice.linears.front());
  expect_rejected(twice, "is given twice");

  PackedCheckpointToWrite short_codes = src.ckpt;
  short_codes.linears[1].matrix.codes.pop_back();
  expect_rejected(short_codes, "code count does not match");

  PackedCheckpointToWrite quantized_source = src.ckpt;
  quantized_source.source_config["quantization_config"] = {{"quant_method", "awq"}};
  expect_rejected(quantized_source, "already has a quantization_config");

  PackedCheckpointToWrite no_tokenizer = src.ckpt;
  no_tokenizer.tokenizer_dir = tmp / "no-such-folder";
  expect_rejected(no_tokenizer, "tokenizer source folder not found");
}

// W8A8 linears: w8pcs storage, the activation quantization in the type name, the static
// scale as its own tensor; the writer refuses other weights or a bad static scale.
TEST_F(PackedCheckpointTest, W8A8LinearsRoundTripWithTheirActivationQuantization) {
  constexpr float kStaticScale = 0.0375f;
  const QuantizedMatrix w8 = test::quantized(kHidden, kHidden, kW8A8Weights, 7);
  src.ckpt.linears.push_back({std::string(kLayer) + "mlp.up_proj", w8, "smoothquant", json::object(), std::nullopt,
                              ActivationQuant::PerToken, 0.0f});
  src.ckpt.linears.push_back({std::string(kLayer) + "mlp.down_proj", w8, "smoothquant", json::object(), std::nullopt,
                              ActivationQuant::PerTensor, kStaticScale});
  write_packed_checkpoint(src.ckpt, out);
  const PackedCheckpoint p = PackedCheckpoint::open(out);
  const PackedLinear* token = p.find_linear(std::string(kLayer) + "mlp.up_proj");
  const PackedLinear* tensor = p.find_linear(std::string(kLayer) + "mlp.down_proj");
  ASSERT_NE(token, nullptr);
  ASSERT_NE(tensor, nullptr);
  EXPECT_EQ(token->quant_type, "w8a8");
  EXPECT_EQ(token->act_quant, ActivationQuant::PerToken);
  EXPECT_EQ(token->input_scale, nullptr);
  EXPECT_EQ(tensor->quant_type, "w8a8static");
  ASSERT_NE(tensor->input_scale, nullptr);
  float stored = 0;
  std::memcpy(&stored, tensor->input_scale->data, sizeof stored);
  EXPECT_EQ(stored, kStaticScale);
  const QuantizedMatrix back = unpack_linear(*tensor);
  EXPECT_EQ(back.codes, w8.codes);
  EXPECT_EQ(back.scales, w8.scales);
  EXPECT_TRUE(p.linear_tensor_names().count(std::string(kLayer) + "mlp.down_proj.input_scale"));
  const std::vector<std::string> types = read_json_file(out / "config.json")["quantization_config"]["quant_types"];
  EXPECT_NE(std::find(types.begin(), types.end(), "w8a8static"), types.end());

  fs::remove_all(out);
  PackedCheckpointToWrite not_int8 = src.ckpt;
  not_int8.linears.back().matrix = src.ckpt.linears.front().matrix;  // w4g32a
  EXPECT_THROW(write_packed_checkpoint(not_int8, out), Error);
  PackedCheckpointToWrite bad_scale = src.ckpt;
  bad_scale.linears.back().input_scale = std::numeric_limits<float>::infinity();
  EXPECT_THROW(write_packed_checkpoint(bad_scale, out), Error);
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(PackedCheckpointTest, HashCheckCanBeSkipped) {
  write_packed_checkpoint(src.ckpt, out);
  // Flip the last byte of the file (the data of the last tensor by name).
  std::string bytes = test::read_bytes(out / "model.safetensors");
  bytes.back() = static_cast<char>(bytes.back() ^ 0x01);
  test::write_bytes(out / "model.safetensors", bytes);
  EXPECT_THROW(PackedCheckpoint::open(out), Error);
  EXPECT_NO_THROW(PackedCheckpoint::open(out, {.verify_sha256 = false}));
}

}  // namespace
}  // namespace fsq
