// Table of malformed inputs, each built as bytes here. Every case must throw fsq::Error
// whose message is one line, names the file, and says what is wrong.
#include <gtest/gtest.h>

#include <functional>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "formats/checkpoint.h"
#include "formats/safetensors.h"
#include "test_support.h"

namespace fsq::test {
namespace {

using nlohmann::json;

enum class Open { Safetensors, Checkpoint };

struct Case {
  const char* name;
  Open open;
  // Fills the scratch dir and returns what to open (a file or a checkpoint dir).
  std::function<fs::path(const TempDir&)> build;
  const char* file;      // must appear in the message
  const char* expected;  // must appear in the message
};

// One tensor entry of a header.
std::string entry(const std::string& name, const std::string& dtype, const std::string& shape,
                  const std::string& offsets) {
  return "\"" + name + "\": {\"dtype\": \"" + dtype + "\", \"shape\": " + shape +
         ", \"data_offsets\": " + offsets + "}";
}

// A safetensors case: `bytes` written to model.safetensors.
Case st(const char* name, std::string bytes, const char* expected) {
  return {name, Open::Safetensors,
          [bytes](const TempDir& d) {
            write_bytes(d / "model.safetensors", bytes);
            return d / "model.safetensors";
          },
          "model.safetensors", expected};
}

// A header-only case: the given header with `data` bytes after it.
Case sth(const char* name, const std::string& header, size_t data, const char* expected) {
  return st(name, safetensors_bytes(header, data), expected);
}

// A checkpoint case built by `fill`.
Case ck(const char* name, std::function<void(const TempDir&)> fill, const char* file,
        const char* expected) {
  return {name, Open::Checkpoint,
          [fill](const TempDir& d) {
            fill(d);
            return d.path();
          },
          file, expected};
}

const std::vector<float> kFour = {1, 2, 3, 4};

void single_checkpoint(const TempDir& d, const std::string& config) {
  write_bytes(d / "config.json", config);
  write_safetensors(d / "model.safetensors", {{"w", DType::F32, {4}, as_bytes(kFour)}});
}

// Two shards; `weight_map` is written as the index as given.
void sharded(const TempDir& d, const json& weight_map) {
  write_bytes(d / "config.json", llama_config());
  write_safetensors(d / "s1.safetensors", {{"a", DType::F32, {4}, as_bytes(kFour)}});
  write_safetensors(d / "s2.safetensors", {{"b", DType::F32, {4}, as_bytes(kFour)}});
  write_bytes(d / "model.safetensors.index.json", json{{"weight_map", weight_map}}.dump());
}

const std::string kA8 = entry("a", "F32", "[2]", "[0, 8]");

std::vector<Case> cases() {
  const char* kIndex = "model.safetensors.index.json";
  return {
      // --- framing ---
      st("EmptyFile", "", "too short"),
      st("TruncatedLength", std::string("\x10\x00\x00\x00\x00", 5), "too short"),
      st("HeaderBeyondFile", le64(1000) + "{}", "runs past the end of the file"),
      st("HeaderOverCap", le64(200'000'000) + "{}", "exceeds the limit"),
      st("HeaderLengthMaxU64", le64(~0ull) + "{}", "exceeds the limit"),
      // --- header text ---
      sth("BadJson", "{\"a\": ", 0, "not valid JSON"),
      sth("BadJsonWithNewline", "{\n\"a\":\n}", 0, "not valid JSON"),
      sth("EmptyHeader", "", 0, "not valid JSON"),
      // nlohmann reports a number too large for a double as out_of_range, not parse_error.
      sth("NumberOverflow", "{\"a\":1e400}", 0, "not valid JSON"),
      sth("HeaderIsArray", "[]", 0, "must be a JSON object"),
      sth("NonUtf8Header", "{\"\xff\xfe\": {}}", 0, "not valid UTF-8"),
      sth("OverlongUtf8Header", "{\"\xc0\xaf\": {}}", 0, "not valid UTF-8"),
      sth("DuplicateTensorName", "{" + kA8 + ", " + kA8 + "}", 8, "twice"),
      // --- entries ---
      sth("EntryNotObject", "{\"a\": [1, 2]}", 0, "entry must be a JSON object"),
      sth("MissingDtype", "{\"a\": {\"shape\": [2], \"data_offsets\": [0, 8]}}", 8, "missing \"dtype\""),
      sth("UnexpectedKey", "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8], \"x\": 1}}", 8,
          "unexpected key"),
      sth("UnknownDtype", "{" + entry("a", "F8_E4M3", "[2]", "[0, 2]") + "}", 2, "unknown dtype 'F8_E4M3'"),
      sth("DtypeNotString", "{\"a\": {\"dtype\": 4, \"shape\": [2], \"data_offsets\": [0, 8]}}", 8,
          "\"dtype\" must be a string"),
      sth("ShapeSizeMismatch", "{" + entry("a.weight", "F32", "[10, 20]", "[0, 400]") + "}", 400,
          "tensor 'a.weight' span [0, 400) is 400 bytes but shape [10, 20] x F32 needs 800"),
      sth("NegativeDim", "{" + entry("a", "F32", "[-2]", "[0, 8]") + "}", 8, "non-negative integer"),
      sth("FloatDim", "{" + entry("a", "F32", "[2.0]", "[0, 8]") + "}", 8, "non-negative integer"),
      sth("StringDim", "{" + entry("a", "F32", "[\"2\"]", "[0, 8]") + "}", 8, "non-negative integer"),
      sth("ShapeNotArray", "{" + entry("a", "F32", "2", "[0, 8]") + "}", 8, "\"shape\" must be an array"),
      sth("DimProductOverflows", "{" + entry("a", "F32", "[4294967296, 4294967296, 16]", "[0, 16]") + "}", 16,
          "overflows 64 bits"),
      sth("OffsetsWrongLength", "{" + entry("a", "F32", "[2]", "[0]") + "}", 8, "\"data_offsets\""),
      sth("OffsetsWrongType", "{" + entry("a", "F32", "[2]", "[\"0\", \"8\"]") + "}", 8, "\"data_offsets\""),
      sth("OffsetsNegative", "{" + entry("a", "F32", "[2]", "[-8, 0]") + "}", 8, "\"data_offsets\""),
      sth("OffsetsReversed", "{" + entry("a", "F32", "[0]", "[8, 0]") + "}", 8, "ends before it begins"),
      // --- layout of the data section ---
      sth("OverlappingSpans", "{" + kA8 + ", " + entry("b", "F32", "[2]", "[4, 12]") + "}", 12, "overlaps"),
      sth("GapBetweenSpans", "{" + kA8 + ", " + entry("b", "F32", "[2]", "[12, 20]") + "}", 20, "gap of 4 bytes"),
      sth("SpanBeyondEof", "{" + entry("a", "F32", "[4]", "[0, 16]") + "}", 8, "runs past the end of the data"),
      sth("HugeSpanTinyFile", "{" + entry("a", "F32", "[4611686018427387904]", "[0, 18446744073709551615]") + "}",
          8, "runs past the end of the data"),
      sth("TrailingBytes", "{" + kA8 + "}", 12, "4 trailing bytes"),
      sth("DataWithoutTensors", "{}", 8, "8 trailing bytes"),
      // --- metadata ---
      sth("MetadataNotObject", "{\"__metadata__\": 5}", 0, "__metadata__ must be an object"),
      sth("MetadataValueNotString", "{\"__metadata__\": {\"format\": 1}}", 0, "must be a string"),
      // --- hostile names still give one line ---
      sth("NewlineInName", "{" + entry("a\\nb", "F99", "[2]", "[0, 8]") + "}", 8, "tensor 'a\\x0ab'"),
      // --- checkpoint directories ---
      ck("MissingDirectory", [](const TempDir& d) { fs::remove_all(d.path()); }, "fsq-formats-test",
         "checkpoint directory not found"),
      ck("MissingConfig", [](const TempDir& d) {
           write_safetensors(d / "model.safetensors", {{"w", DType::F32, {4}, as_bytes(kFour)}});
         }, "config.json", "file not found"),
      ck("NoWeights", [](const TempDir& d) { write_bytes(d / "config.json", llama_config()); },
         "fsq-formats-test", "no weights"),
      ck("ConfigBadJson", [](const TempDir& d) { single_checkpoint(d, "{\"hidden_size\": 64,\n"); },
         "config.json", "not valid JSON"),
      ck("ConfigNumberOverflow", [](const TempDir& d) { single_checkpoint(d, "{\"rope_theta\": 1e400}"); },
         "config.json", "not valid JSON"),
      ck("ConfigUnknownArchitecture",
         [](const TempDir& d) {
           single_checkpoint(d, llama_config({{"architectures", json::array({"GPT2LMHeadModel"})}}));
         },
         "config.json", "unsupported architecture \"GPT2LMHeadModel\" (supported: LlamaForCausalLM"),
      ck("ConfigNoArchitectures",
         [](const TempDir& d) { single_checkpoint(d, llama_config({{"architectures", nullptr}})); },
         "config.json", "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM"),
      ck("ConfigKvHeadsDoNotDivide",
         [](const TempDir& d) { single_checkpoint(d, llama_config({{"num_key_value_heads", 3}})); },
         "config.json", "must be a multiple of num_key_value_heads (3)"),
      ck("ConfigUnsupportedActivation",
         [](const TempDir& d) { single_checkpoint(d, llama_config({{"hidden_act", "relu"}})); },
         "config.json", "hidden_act 'relu' is not supported for LlamaForCausalLM (supported: silu)"),
      ck("ConfigFewerLayersThanTheWeights",
         [](const TempDir& d) {
           write_bytes(d / "config.json", llama_config({{"num_hidden_layers", 1}}));
           write_bytes(d / "model.safetensors",
                       safetensors_bytes(R"({"model.layers.0.input_layernorm.weight":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                         R"("model.layers.1.input_layernorm.weight":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                         8));
         },
         "fsq-formats-test", "the config says 1 decoder layers but the weights hold 2"),
      ck("ConfigWrongType",
         [](const TempDir& d) { single_checkpoint(d, llama_config({{"num_hidden_layers", "2"}})); },
         "config.json", "key \"num_hidden_layers\" must be an integer"),
      ck("CorruptSingleFile",
         [](const TempDir& d) {
           write_bytes(d / "config.json", llama_config());
           write_bytes(d / "model.safetensors", "short");
         },
         "model.safetensors", "too short"),
      ck("MissingShard",
         [](const TempDir& d) {
           sharded(d, {{"a", "s1.safetensors"}, {"b", "s2.safetensors"}});
           fs::remove(d / "s2.safetensors");
         },
         kIndex, "shard \"s2.safetensors\" named in weight_map does not exist"),
      ck("TensorNotInItsShard",
         [](const TempDir& d) { sharded(d, {{"a", "s1.safetensors"}, {"b", "s1.safetensors"}}); }, kIndex,
         "tensor \"b\" is mapped to shard \"s1.safetensors\", which does not contain it"),
      ck("ShardTensorNotIndexed",
         [](const TempDir& d) {
           sharded(d, {{"a", "s1.safetensors"}, {"b", "s2.safetensors"}});
           write_safetensors(d / "s1.safetensors", {{"a", DType::F32, {4}, as_bytes(kFour)},
                                                    {"x", DType::F32, {4}, as_bytes(kFour)}});
         },
         kIndex, "tensor \"x\" in shard \"s1.safetensors\" is not listed in weight_map"),
      ck("TensorInTwoShards",
         [](const TempDir& d) {
           sharded(d, {{"a", "s1.safetensors"}, {"b", "s2.safetensors"}});
           write_safetensors(d / "s2.safetensors", {{"a", DType::F32, {4}, as_bytes(kFour)},
                                                    {"b", DType::F32, {4}, as_bytes(kFour)}});
         },
         kIndex, "tensor \"a\" is in two shards"),
      ck("ShardOutsideDirectory",
         [](const TempDir& d) { sharded(d, {{"a", "../s1.safetensors"}, {"b", "s2.safetensors"}}); }, kIndex,
         "not a plain file name"),
      ck("IndexBadJson",
         [](const TempDir& d) {
           sharded(d, {{"a", "s1.safetensors"}});
           write_bytes(d / "model.safetensors.index.json", "{\"weight_map\": [");
         },
         kIndex, "not valid JSON"),
      ck("IndexWithoutWeightMap",
         [](const TempDir& d) {
           sharded(d, {{"a", "s1.safetensors"}});
           write_bytes(d / "model.safetensors.index.json", "{\"metadata\": {}}");
         },
         kIndex, "\"weight_map\""),
      ck("CorruptShard",
         [](const TempDir& d) {
           sharded(d, {{"a", "s1.safetensors"}, {"b", "s2.safetensors"}});
           write_bytes(d / "s2.safetensors", safetensors_bytes("{" + kA8 + "}", 4));
         },
         "s2.safetensors", "runs past the end of the data"),
  };
}

class Malformed : public ::testing::TestWithParam<Case> {};

TEST_P(Malformed, ThrowsOneLineErrorNamingFileAndProblem) {
  const Case& c = GetParam();
  TempDir dir;
  const fs::path target = c.build(dir);
  try {
    if (c.open == Open::Safetensors)
      SafetensorsFile::open(target);
    else
      Checkpoint::open(target);
    FAIL() << "no fsq::Error thrown";
  } catch (const fsq::Error& e) {
    const std::string msg = e.what();
    RecordProperty("message", msg);  // visible with --gtest_output=xml
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "not one line: " << msg;
    EXPECT_NE(msg.find(c.file), std::string::npos) << "file not named: " << msg;
    EXPECT_NE(msg.find(c.expected), std::string::npos) << "expected '" << c.expected << "' in: " << msg;
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, Malformed, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace fsq::test
