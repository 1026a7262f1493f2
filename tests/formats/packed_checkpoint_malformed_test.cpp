// Malformed packed checkpoints: each case damages one thing in an otherwise valid
// directory (written here by hand, not by the writer, which would refuse most of these)
// and expects one error line naming the file at fault and the problem.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <limits>
#include <map>

#include "common/error.h"
#include "common/half.h"
#include "common/sha256.h"
#include "formats/packed_checkpoint.h"
#include "formats/quant/bitpack.h"
#include "formats/quant/quant_types.h"
#include "quant/packed_test_support.h"

namespace fsq {
namespace {

using test::TempDir;
namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr int64_t kRows = 4, kCols = 64;
const std::string kAsym = "model.layers.0.mlp.up_proj";   // w4g32a: scales/qzeros [4, 2]
const std::string kSym = "model.layers.0.mlp.down_proj";  // w3g32s: scales [4, 2]
const std::string kLut = "model.layers.0.mlp.gate_proj";  // lut4: lut [4, 16], 4 sparse values
const std::string kW8 = "model.layers.0.self_attn.o_proj";  // w8a8static: w8pcs + input_scale [1]
const std::string kRanges = std::string("model.layers.0") + kIntonlyRangesSuffix;  // F32 [8], intonly
const std::string kEmbed = "model.embed_tokens";  // w8g64s under embedding_and_head (--head-bits 8)

struct RawTensor {
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;
};

// The pieces of a packed directory, before they are written.
struct RawCheckpoint {
  json config;
  json manifest;
  std::map<std::string, RawTensor> tensors;

  void add_linear(const std::string& name, const std::string& type, uint32_t seed) {
    const QuantizedMatrix m = test::quantized(kRows, kCols, find_uniform_quant(type), seed);
    const int64_t words = packed_words_per_row(m.quant.bits, kCols);
    tensors[name + ".qweight"] = {
        DType::I32, {kRows, words}, test::to_bytes(pack_rows(m.codes, kRows, kCols, m.quant.bits))};
    tensors[name + ".scales"] = {DType::F16, {kRows, m.groups()}, test::to_bytes(m.scales)};
    if (!m.zeros.empty())
      tensors[name + ".qzeros"] = {DType::U8, {kRows, m.groups()}, test::to_bytes(m.zeros)};
    manifest["linears"][name] = {
        {"quant_type", type}, {"shape", {kRows, kCols}}, {"method", "rtn"}, {"options", json::object()}};
  }

  // The same, listed as a quantized embedding/head matrix.
  void add_head_matrix(const std::string& name, const std::string& type, uint32_t seed) {
    add_linear(name, type, seed);
    manifest[kPackedHeadKey][name] = manifest["linears"][name];
    manifest["linears"].erase(name);
  }

  // A lut4 linear whose CSR part holds row 0: column 5, row 1: none, row 2: 0 and 63, row 3: 10.
  void add_lut_linear(const std::string& name) {
    std::vector<uint8_t> codes(kRows * kCols);
    for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint8_t>((i * 7) % 16);
    std::vector<uint16_t> lut(kRows * 16);
    for (size_t i = 0; i < lut.size(); ++i) lut[i] = f32_to_f16(0.01f * (static_cast<float>(i % 16) - 7.5f));
    tensors[name + ".qweight"] = {DType::I32, {kRows, packed_words_per_row(4, kCols)},
                                  test::to_bytes(pack_rows(codes, kRows, kCols, 4))};
    tensors[name + ".lut"] = {DType::F16, {kRows, 16}, test::to_bytes(lut)};
    tensors[name + ".sparse_row_ptr"] = {DType::I32, {kRows + 1}, test::to_bytes(std::vector<int32_t>{0, 1, 1, 3, 4})};
    tensors[name + ".sparse_col"] = {DType::U16, {4}, test::to_bytes(std::vector<uint16_t>{5, 0, 63, 10})};
    tensors[name + ".sparse_val"] = {DType::F16, {4}, test::to_bytes(std::vector<uint16_t>(4, f32_to_f16(0.5f)))};
    manifest["linears"][name] = {
        {"quant_type", "lut4"}, {"shape", {kRows, kCols}}, {"method", "squeezellm"}, {"options", json::object()}};
  }

  static RawCheckpoint valid() {
    RawCheckpoint c;
    c.config = json::parse(test::llama_config());
    c.config["quantization_config"] = {{"quant_method", "fsq"}, {"format_version", kPackedFormatVersion}};
    c.manifest = {{"format_version", kPackedFormatVersion},
                  {"source_sha256", ""},
                  {"calibration", nullptr},
                  {"linears", json::object()}};
    c.add_linear(kAsym, "w4g32a", 1);
    c.add_linear(kSym, "w3g32s", 2);
    c.add_lut_linear(kLut);
    c.add_linear(kW8, "w8pcs", 3);
    c.add_head_matrix(kEmbed, "w8g64s", 4);
    c.manifest["linears"][kW8]["quant_type"] = "w8a8static";
    c.tensors[kW8 + ".input_scale"] = {DType::F32, {1}, test::to_bytes(std::vector<float>{0.05f})};
    c.tensors["model.norm.weight"] = {DType::F32, {kCols}, test::to_bytes(std::vector<float>(kCols, 1.0f))};
    c.tensors[kRanges] = {DType::F32, {kIntonlyRangeCount},
                          test::to_bytes(std::vector<float>(kIntonlyRangeCount, 2.5f))};
    return c;
  }

  void hash_tensors() {
    manifest["tensor_sha256"] = json::object();
    for (const auto& [name, t] : tensors) manifest["tensor_sha256"][name] = sha256_hex(t.bytes);
  }

  void write(const fs::path& dir) const {
    std::vector<TensorToWrite> list;
    for (const auto& [name, t] : tensors) list.push_back({name, t.dtype, t.shape, t.bytes});
    write_safetensors(dir / kPackedWeightsFile, list);
    test::write_bytes(dir / kPackedConfigFile, config.dump(2));
    test::write_bytes(dir / kPackedManifestFile, manifest.dump(2));
  }
};

struct MalformedCase {
  std::string name;
  std::function<void(RawCheckpoint&)> before_hashing;  // damage the content
  std::function<void(RawCheckpoint&)> after_hashing;   // damage that the hashes must catch
  std::function<void(const fs::path&)> after_writing;  // damage to the files themselves
  std::string file;                                    // the file the message must name
  std::string problem;                                 // a phrase the message must hold
};

// Names the case in test listings (the default prints the struct's bytes).
void PrintTo(const MalformedCase& c, std::ostream* os) { *os << c.name; }

void no_op(RawCheckpoint&) {}
void no_file_op(const fs::path&) {}

// Writes a little-endian value into element i of a tensor's bytes.
template <typename T>
void put(RawTensor& t, size_t i, T value) {
  std::memcpy(t.bytes.data() + i * sizeof(T), &value, sizeof(T));
}

std::vector<std::byte> f32_scales(int64_t n) {
  return test::to_bytes(std::vector<float>(static_cast<size_t>(n), 0.01f));
}

const std::vector<MalformedCase>& cases() {
  static const std::vector<MalformedCase> table = {
      {"UnknownFormatVersion", [](RawCheckpoint& c) { c.manifest["format_version"] = 2; }, no_op, no_file_op,
       "fsq.json", "unknown format_version 2 (this build reads 1)"},
      {"MissingFsqJson", no_op, no_op, [](const fs::path& d) { fs::remove(d / "fsq.json"); }, "fsq.json",
       "file not found"},
      {"MissingSafetensors", no_op, no_op, [](const fs::path& d) { fs::remove(d / "model.safetensors"); },
       "model.safetensors", "cannot open"},
      {"MissingConfigQuantizationBlock", [](RawCheckpoint& c) { c.config.erase("quantization_config"); },
       no_op, no_file_op, "config.json", "missing \"quantization_config\""},
      {"UnknownQuantType", [](RawCheckpoint& c) { c.manifest["linears"][kAsym]["quant_type"] = "w5g32a"; },
       no_op, no_file_op, "fsq.json", "unknown quant type 'w5g32a'"},
      {"MissingTensor", [](RawCheckpoint& c) { c.tensors.erase(kAsym + ".scales"); }, no_op, no_file_op,
       "model.safetensors", "'" + kAsym + ".scales' is missing"},
      {"QWeightShapeDoesNotMatchBits",  // 4-bit words under a 3-bit type
       [](RawCheckpoint& c) { c.manifest["linears"][kAsym]["quant_type"] = "w3g32a"; }, no_op, no_file_op,
       "model.safetensors",
       "'" + kAsym + ".qweight' shape does not match w3g32a for [4, 64] (expected [4, 6], got [4, 8])"},
      {"ScaleCountMismatch",
       [](RawCheckpoint& c) {
         c.tensors[kSym + ".scales"] = {DType::F16, {kRows, 1}, std::vector<std::byte>(kRows * 2)};
       },
       no_op, no_file_op, "model.safetensors", "'" + kSym + ".scales' shape does not match w3g32s"},
      {"ZeroCountMismatch",
       [](RawCheckpoint& c) {
         c.tensors[kAsym + ".qzeros"] = {DType::U8, {kRows, 3}, std::vector<std::byte>(kRows * 3)};
       },
       no_op, no_file_op, "model.safetensors", "'" + kAsym + ".qzeros' shape does not match w4g32a"},
      {"MissingZerosForAsymmetric", [](RawCheckpoint& c) { c.tensors.erase(kAsym + ".qzeros"); }, no_op,
       no_file_op, "model.safetensors", "'" + kAsym + ".qzeros' is missing"},
      {"ZerosForSymmetric",
       [](RawCheckpoint& c) {
         c.tensors[kSym + ".qzeros"] = {DType::U8, {kRows, 2}, std::vector<std::byte>(kRows * 2)};
       },
       no_op, no_file_op, "model.safetensors", "is present but w3g32s is symmetric"},
      {"WrongScaleDtype",
       [](RawCheckpoint& c) {
         c.tensors[kAsym + ".scales"] = {DType::F32, {kRows, 2}, f32_scales(kRows * 2)};
       },
       no_op, no_file_op, "model.safetensors",
       "'" + kAsym + ".scales' has the wrong dtype (expected F16, got F32)"},
      {"ZeroPointOutOfRange", [](RawCheckpoint& c) { c.tensors[kAsym + ".qzeros"].bytes[5] = std::byte{16}; },
       no_op, no_file_op, "model.safetensors", "zero point 5 is 16, above 15 for w4g32a"},
      {"NonFiniteScale",  // fp16 0x7C00 = +inf, little-endian, as scale 1
       [](RawCheckpoint& c) {
         c.tensors[kSym + ".scales"].bytes[2] = std::byte{0x00};
         c.tensors[kSym + ".scales"].bytes[3] = std::byte{0x7C};
       },
       no_op, no_file_op, "model.safetensors", "scale 1 is not finite"},
      {"DenseWeightNextToQuantized",
       [](RawCheckpoint& c) { c.tensors[kSym + ".weight"] = c.tensors["model.norm.weight"]; }, no_op,
       no_file_op, "model.safetensors", "'" + kSym + ".weight' is present next to quantized linear"},
      {"TensorNotHashed", no_op,
       [](RawCheckpoint& c) { c.manifest["tensor_sha256"].erase("model.norm.weight"); }, no_file_op,
       "fsq.json", "'model.norm.weight' of model.safetensors is not in tensor_sha256"},
      {"Sha256Mismatch", no_op,
       [](RawCheckpoint& c) { c.tensors[kSym + ".qweight"].bytes[3] ^= std::byte{0x10}; }, no_file_op,
       "model.safetensors", "'" + kSym + ".qweight' sha256 does not match fsq.json"},
      {"LutShapeDoesNotMatchBits",
       [](RawCheckpoint& c) { c.tensors[kLut + ".lut"].shape = {kRows * 2, 8}; }, no_op, no_file_op,
       "model.safetensors", "'" + kLut + ".lut' shape does not match lut4 for [4, 64] (expected [4, 16], got [8, 8])"},
      {"LutCentroidNotFinite", [](RawCheckpoint& c) { put<uint16_t>(c.tensors[kLut + ".lut"], 3, 0x7E00); }, no_op,
       no_file_op, "model.safetensors", "centroid 3 is not finite"},
      {"ScalesNextToLutLinear",
       [](RawCheckpoint& c) { c.tensors[kLut + ".scales"] = c.tensors[kSym + ".scales"]; }, no_op, no_file_op,
       "model.safetensors", "'" + kLut + ".scales' does not belong to a lut4 linear"},
      {"SparsePartIncomplete", [](RawCheckpoint& c) { c.tensors.erase(kLut + ".sparse_val"); }, no_op, no_file_op,
       "model.safetensors", "has an incomplete sparse part"},
      {"SparseRowPtrDoesNotStartAtZero",
       [](RawCheckpoint& c) { put<int32_t>(c.tensors[kLut + ".sparse_row_ptr"], 0, 1); }, no_op, no_file_op,
       "model.safetensors", "sparse_row_ptr' does not start at 0"},
      {"SparseRowPtrDecreases",
       [](RawCheckpoint& c) { put<int32_t>(c.tensors[kLut + ".sparse_row_ptr"], 2, 0); }, no_op, no_file_op,
       "model.safetensors", "decreases or overruns at row 1"},
      {"SparseRowPtrEndsBeforeTheValues",
       [](RawCheckpoint& c) { put<int32_t>(c.tensors[kLut + ".sparse_row_ptr"], 4, 3); }, no_op, no_file_op,
       "model.safetensors", "ends at 3 but '" + kLut + ".sparse_val' holds 4 values"},
      {"SparseColumnOutOfRange",
       [](RawCheckpoint& c) { put<uint16_t>(c.tensors[kLut + ".sparse_col"], 2, 64); }, no_op, no_file_op,
       "model.safetensors", "column 64 of row 2 is outside 0..63"},
      {"SparseColumnsNotIncreasing",
       [](RawCheckpoint& c) { put<uint16_t>(c.tensors[kLut + ".sparse_col"], 2, 0); }, no_op, no_file_op,
       "model.safetensors", "columns of row 2 are not strictly increasing"},
      {"SparseColumnsWiderThanNeeded",
       [](RawCheckpoint& c) {
         c.tensors[kLut + ".sparse_col"] = {DType::I32, {4}, test::to_bytes(std::vector<int32_t>{5, 0, 63, 10})};
       },
       no_op, no_file_op, "model.safetensors", "sparse_col' has the wrong dtype (expected U16, got I32)"},
      {"SparseValueNotFinite",
       [](RawCheckpoint& c) { put<uint16_t>(c.tensors[kLut + ".sparse_val"], 1, 0xFC00); }, no_op, no_file_op,
       "model.safetensors", "value 1 is not finite"},
      {"W8A8CodeMinus128",  // byte 0 of the row stands for -128, outside the int8 kernels' range
       [](RawCheckpoint& c) { c.tensors[kW8 + ".qweight"].bytes[kCols + 7] = std::byte{0}; }, no_op, no_file_op,
       "model.safetensors", "code -128 at [1, 7]; w8a8static codes are -127 .. 127"},
      {"W8A8StaticScaleMissing", [](RawCheckpoint& c) { c.tensors.erase(kW8 + ".input_scale"); }, no_op, no_file_op,
       "model.safetensors", "'" + kW8 + ".input_scale' is missing"},
      {"W8A8StaticScaleNotPositive", [](RawCheckpoint& c) { put<float>(c.tensors[kW8 + ".input_scale"], 0, -1.0f); },
       no_op, no_file_op, "model.safetensors", "static activation scale -1.000000 is not finite and > 0"},
      {"InputScaleOnPerTokenType",
       [](RawCheckpoint& c) { c.manifest["linears"][kW8]["quant_type"] = "w8a8"; }, no_op, no_file_op,
       "model.safetensors", "'" + kW8 + ".input_scale' does not belong to a w8a8 linear"},
      {"InputScaleOnWeightOnlyType",
       [](RawCheckpoint& c) { c.tensors[kSym + ".input_scale"] = c.tensors[kW8 + ".input_scale"]; }, no_op,
       no_file_op, "model.safetensors", "'" + kSym + ".input_scale' does not belong to a w3g32s linear"},
      {"IntonlyRangeZero", [](RawCheckpoint& c) { put<float>(c.tensors[kRanges], 3, 0.0f); }, no_op, no_file_op,
       "model.safetensors", "range 3 is 0.000000; integer-only ranges must be finite and > 0"},
      {"IntonlyRangeNotFinite",
       [](RawCheckpoint& c) { put<float>(c.tensors[kRanges], 7, std::numeric_limits<float>::infinity()); }, no_op,
       no_file_op, "model.safetensors", "range 7 is inf; integer-only ranges must be finite and > 0"},
      {"IntonlyRangesWrongShape",
       [](RawCheckpoint& c) {
         c.tensors[kRanges].shape = {kIntonlyRangeCount / 2, 2};
       },
       no_op, no_file_op, "model.safetensors", "must be F32 [8] (integer-only activation ranges), got F32 [4, 2]"},
      {"IntonlyRangesWrongDtype",
       [](RawCheckpoint& c) {
         c.tensors[kRanges] = {DType::F16, {kIntonlyRangeCount}, std::vector<std::byte>(2 * kIntonlyRangeCount)};
       },
       no_op, no_file_op, "model.safetensors", "must be F32 [8] (integer-only activation ranges), got F16 [8]"},
      {"HeadMatricesNotAnObject", [](RawCheckpoint& c) { c.manifest[kPackedHeadKey] = 3; }, no_op, no_file_op,
       "fsq.json", "\"embedding_and_head\" must be an object"},
      {"HeadMatrixOfALutType",
       [](RawCheckpoint& c) {
         c.manifest[kPackedHeadKey][kLut] = c.manifest["linears"][kLut];
         c.manifest["linears"].erase(kLut);
       },
       no_op, no_file_op, "fsq.json", "the embedding and head take uniform types only"},
      {"HeadMatrixAlsoALinear",
       [](RawCheckpoint& c) { c.manifest[kPackedHeadKey][kAsym] = c.manifest["linears"][kAsym]; }, no_op,
       no_file_op, "fsq.json", "is listed twice"},
      {"HeadMatrixQweightMissing", [](RawCheckpoint& c) { c.tensors.erase(kEmbed + ".qweight"); }, no_op, no_file_op,
       "model.safetensors", "model.embed_tokens.qweight"},
      {"TruncatedSafetensors", no_op, no_op,
       [](const fs::path& d) {
         fs::resize_file(d / "model.safetensors", fs::file_size(d / "model.safetensors") - 10);
       },
       "model.safetensors", "past the end"},
  };
  return table;
}

TEST(PackedMalformedBaseline, ValidDirectoryOpens) {
  TempDir tmp;
  RawCheckpoint c = RawCheckpoint::valid();
  c.hash_tensors();
  c.write(tmp.path());
  const PackedCheckpoint p = PackedCheckpoint::open(tmp.path());
  ASSERT_EQ(p.linears().size(), 4u);
  const PackedLinear* w8 = p.find_linear(kW8);
  ASSERT_NE(w8, nullptr);
  EXPECT_EQ(w8->act_quant, ActivationQuant::PerTensor);
  ASSERT_NE(w8->input_scale, nullptr);
  ASSERT_EQ(p.dense_tensors().size(), 1u);
  EXPECT_EQ(p.dense_tensors()[0]->name, "model.norm.weight");
  const TensorView* ranges = p.intonly_ranges(kRanges);
  ASSERT_NE(ranges, nullptr);
  EXPECT_TRUE(p.has_intonly_ranges());
  EXPECT_TRUE(p.linear_tensor_names().count(kRanges));
  EXPECT_EQ(p.intonly_ranges("model.layers.1" + std::string(kIntonlyRangesSuffix)), nullptr);
  ASSERT_EQ(p.head_matrices().size(), 1u);
  ASSERT_NE(p.find_head_matrix(kEmbed), nullptr);
  EXPECT_EQ(p.find_head_matrix(kEmbed)->quant_type, "w8g64s");
  EXPECT_EQ(p.find_linear(kEmbed), nullptr);
  EXPECT_TRUE(p.linear_tensor_names().count(kEmbed + ".qweight"));
}

class PackedMalformed : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(PackedMalformed, FailsWithOneLineNamingTheFile) {
  const MalformedCase& mc = GetParam();
  TempDir tmp;
  RawCheckpoint c = RawCheckpoint::valid();
  mc.before_hashing(c);
  c.hash_tensors();
  mc.after_hashing(c);
  c.write(tmp.path());
  mc.after_writing(tmp.path());
  try {
    PackedCheckpoint::open(tmp.path());
    FAIL() << "opened a damaged checkpoint";
  } catch (const Error& e) {
    const std::string msg = e.what();
    RecordProperty("message", msg);
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_EQ(msg.rfind((tmp.path() / mc.file).string() + ": ", 0), 0u) << msg;
    EXPECT_NE(msg.find(mc.problem), std::string::npos) << msg;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, PackedMalformed, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace fsq
