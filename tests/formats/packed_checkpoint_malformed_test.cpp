// Malformed packed checkpoints: each case damages one thing in an otherwise valid
// directory (written here by hand, not by the writer, which would refuse most of these)
// and expects one error line naming the file at fault and the problem.
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "common/error.h"
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
    c.tensors["model.norm.weight"] = {DType::F32, {kCols}, test::to_bytes(std::vector<float>(kCols, 1.0f))};
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
  EXPECT_EQ(p.linears().size(), 2u);
  ASSERT_EQ(p.dense_tensors().size(), 1u);
  EXPECT_EQ(p.dense_tensors()[0]->name, "model.norm.weight");
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
