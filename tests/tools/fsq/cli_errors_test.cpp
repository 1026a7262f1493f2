// Malformed input through the CLI: non-zero exit, exactly one line on stderr, no crash,
// and no --json file left behind.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <span>

#include "cli_support.h"
#include "formats/safetensors.h"
#include "text_files.h"

namespace fsq::clitest {
namespace {
namespace fs = std::filesystem;

constexpr int kUsageError = 2;

void expect_one_line_error(const RunResult& r, const std::string& mentions) {
  EXPECT_GT(r.exit_code, 0) << "crashed or succeeded; stderr: " << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("fsq: error: ", 0), 0u) << r.err;
  if (!mentions.empty()) {
    EXPECT_NE(r.err.find(mentions), std::string::npos) << r.err;
  }
}

using testing::read_file;
using testing::write_file;

TEST(CliErrors, MissingModelDirectory) {
  const TempDir scratch("fsq-cli-nomodel");
  const fs::path& dir = scratch.path();
  write_file(dir / "d.txt", "hello world");
  RunResult r = run_fsq({"eval", "--model", (dir / "absent").string(), "--data", (dir / "d.txt").string()});
  expect_one_line_error(r, "absent");
  EXPECT_EQ(r.exit_code, kUsageError);
  RunResult none = run_fsq({"eval", "--data", (dir / "d.txt").string()});
  expect_one_line_error(none, "--model");
  EXPECT_EQ(none.exit_code, kUsageError);
}

TEST(CliErrors, UnknownSubcommandAndOption) {
  expect_one_line_error(run_fsq({"frobnicate"}), "");
  const TempDir scratch("fsq-cli-opt");
  const fs::path& dir = scratch.path();
  expect_one_line_error(run_fsq({"eval", "--model", dir.string(), "--no-such-option"}), "--no-such-option");
  expect_one_line_error(run_fsq({}), "");
}

// A binary file given as text is refused with its offset, not scored (it once gave
// perplexity 6e10 with exit 0); the same for calibration data.
TEST(CliErrors, BinaryDataIsRefusedAsText) {
  FSQ_REQUIRE_STORIES260K();
  const TempDir scratch("fsq-cli-binary");
  const fs::path& dir = scratch.path();
  write_file(dir / "binary.txt", std::string("Once upon\0\x01\x02 a time", 19));
  write_file(dir / "latin1.txt", "caf\xe9 au lait");
  RunResult nul = run_fsq({"eval", "--model", stories260k_dir().string(), "--data", (dir / "binary.txt").string(),
                           "--no-speed", "--json", (dir / "r.json").string()});
  expect_one_line_error(nul, "NUL byte at offset 9");
  EXPECT_NE(nul.err.find("binary.txt"), std::string::npos) << nul.err;
  RunResult latin1 = run_fsq({"eval", "--model", stories260k_dir().string(), "--data", (dir / "latin1.txt").string(),
                              "--no-speed"});
  expect_one_line_error(latin1, "invalid byte at offset 3");
  RunResult weights = run_fsq({"calibrate", "--model", stories260k_dir().string(), "--data",
                               (stories260k_dir() / "model.safetensors").string(), "--out", (dir / "c.safetensors").string()});
  expect_one_line_error(weights, "model.safetensors");
  EXPECT_FALSE(fs::exists(dir / "r.json"));
  EXPECT_FALSE(fs::exists(dir / "c.safetensors"));
}

// A NaN in a weight fails eval and quantize naming the tensor, unless eval --allow-nonfinite.
TEST(CliErrors, NonFiniteWeightIsRefusedNamingTheTensor) {
  FSQ_REQUIRE_STORIES260K();
  const TempDir scratch("fsq-cli-nan-weight");
  const fs::path& dir = scratch.path();
  const fs::path model = dir / "model";
  fs::create_directories(model);
  for (const auto& e : fs::directory_iterator(stories260k_dir())) fs::copy(e.path(), model / e.path().filename());
  {
    std::fstream f(model / "model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-4, std::ios::end);  // the last F32 value of the last tensor in the file
    const char quiet_nan[4] = {0, 0, static_cast<char>(0xc0), 0x7f};
    f.write(quiet_nan, 4);
  }
  const std::vector<std::string> eval = {"eval", "--model", model.string(), "--data", tinystories_val().string(),
                                         "--max-windows", "2", "--seq-len", "64", "--no-speed", "--progress", "off"};
  RunResult refused = run_fsq(eval);
  expect_one_line_error(refused, "holds a non-finite value (nan at flat index");
  EXPECT_NE(refused.err.find("tensor '"), std::string::npos) << refused.err;
  RunResult quantize = run_fsq({"quantize", "--model", model.string(), "--method", "rtn", "--out",
                                (dir / "q").string(), "--progress", "off"});
  expect_one_line_error(quantize, "holds a non-finite value");
  EXPECT_FALSE(fs::exists(dir / "q"));
  std::vector<std::string> allowed = eval;
  allowed.push_back("--allow-nonfinite");
  RunResult ran = run_fsq(allowed);
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
}

TEST(CliErrors, BadProtocolAndSeqLen) {
  FSQ_REQUIRE_STORIES260K();
  auto base = std::vector<std::string>{"eval", "--model", stories260k_dir().string(), "--data",
                                       tinystories_val().string(), "--no-speed"};
  auto with = [&](std::vector<std::string> extra) {
    auto a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return run_fsq(a);
  };
  expect_one_line_error(with({"--protocol", "wikitext"}), "--protocol");
  expect_one_line_error(with({"--seq-len", "1"}), "--seq-len");
  expect_one_line_error(with({"--seq-len", "4096"}), "--seq-len");
  expect_one_line_error(with({"--dtype", "int3"}), "--dtype");
}

TEST(CliErrors, DataFileMissingEmptyOrTooShort) {
  FSQ_REQUIRE_STORIES260K();
  const TempDir scratch("fsq-cli-data");
  const fs::path& dir = scratch.path();
  auto eval = [&](const fs::path& data) {
    return run_fsq({"eval", "--model", stories260k_dir().string(), "--data", data.string(), "--no-speed",
                    "--seq-len", "256", "--json", (dir / "r.json").string()});
  };
  expect_one_line_error(eval(dir / "missing.txt"), "missing.txt");
  write_file(dir / "empty.txt", "");
  expect_one_line_error(eval(dir / "empty.txt"), "empty.txt");
  write_file(dir / "short.txt", "Once upon a time");
  expect_one_line_error(eval(dir / "short.txt"), "short.txt");
  EXPECT_FALSE(fs::exists(dir / "r.json"));
  // Nothing but the inputs is left in the folder (no temporary report files).
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 2u);
}

TEST(CliErrors, CorruptWeightsFile) {
  FSQ_REQUIRE_STORIES260K();
  const TempDir scratch("fsq-cli-corrupt");
  const fs::path& dir = scratch.path();
  fs::path model = dir / "model";
  fs::create_directories(model);
  copy_model_side_files(model);
  std::string garbage(4096, '\x7f');
  garbage.append("garbage");
  write_file(model / "model.safetensors", garbage);
  fs::path json = dir / "r.json";
  RunResult r = run_fsq({"eval", "--model", model.string(), "--data", tinystories_val().string(),
                         "--json", json.string()});
  expect_one_line_error(r, "model.safetensors");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_FALSE(fs::exists(json));
  expect_one_line_error(run_fsq({"inspect", model.string()}), "model.safetensors");
  expect_one_line_error(run_fsq({"generate", "--model", model.string(), "--prompt", "x", "-n", "2"}),
                        "model.safetensors");
  // A truncated copy of the real file.
  {
    const std::string bytes = read_file(stories260k_dir() / "model.safetensors");
    write_file(model / "model.safetensors", bytes.substr(0, bytes.size() / 2));
  }
  expect_one_line_error(run_fsq({"eval", "--model", model.string(), "--speed-only"}), "model.safetensors");
}

// stories260K's weights plus `extra` tensors (4 floats each) in `model`.
void write_with_extra_tensors(const fs::path& model, const std::vector<std::string>& extra) {
  fs::create_directories(model);
  copy_model_side_files(model);
  const auto source = SafetensorsFile::open(stories260k_dir() / "model.safetensors");
  std::vector<TensorToWrite> tensors;
  for (const TensorView& t : source->tensors()) tensors.push_back({t.name, t.dtype, t.shape, {t.data, t.nbytes}});
  static const std::vector<float> values(4, 0.5f);
  for (const std::string& name : extra)
    tensors.push_back({name, DType::F32, {4}, std::as_bytes(std::span(values))});
  write_safetensors(model / "model.safetensors", tensors);
}

TEST(CliErrors, TensorsTheModelDoesNotReadAreRefused) {
  FSQ_REQUIRE_STORIES260K();
  const TempDir scratch("fsq-cli-unused");
  const fs::path& dir = scratch.path();
  const std::string rotary = "model.layers.0.self_attn.rotary_emb.inv_freq";
  const std::string stray = "model.layers.4.mlp.gate_proj.lora_A.weight";

  // A rotary cache is harmless: eval runs, inspect lists it as ignored.
  const fs::path harmless = dir / "harmless";
  write_with_extra_tensors(harmless, {rotary});
  RunResult ok = run_fsq({"eval", "--model", harmless.string(), "--speed-only"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  RunResult listed = run_fsq({"inspect", harmless.string(), "--json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const auto j = nlohmann::json::parse(listed.out);
  ASSERT_EQ(j["ignored_tensors"].size(), 1u);
  EXPECT_EQ(j["ignored_tensors"][0]["name"], rotary);
  EXPECT_TRUE(j["unused_tensors"].empty());

  // Anything else would be ignored silently: every command that runs the model refuses it.
  const fs::path model = dir / "stray";
  write_with_extra_tensors(model, {rotary, stray});
  const fs::path out = dir / "out";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"eval", "--model", model.string(), "--speed-only"},
        {"generate", "--model", model.string(), "--prompt", "x", "-n", "2"},
        {"quantize", "--model", model.string(), "--method", "rtn", "--out", out.string()},
        {"calibrate", "--model", model.string(), "--data", tinystories_val().string(), "--samples", "1", "--seq-len",
         "16", "--out", (dir / "calib.safetensors").string()}}) {
    expect_one_line_error(run_fsq(args), "'" + stray + "' is not used by LlamaForCausalLM");
  }
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(dir / "calib.safetensors"));
  RunResult shown = run_fsq({"inspect", model.string()});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("unused      " + stray), std::string::npos) << shown.out;
}

// A tokenizer.json with a huge id (once a std::bad_alloc) or a BPE without merges (once
// tokenized character by character with exit 0): one line naming the file, nothing written.
TEST(CliErrors, MalformedTokenizerJsonIsRefusedNamingTheFile) {
  FSQ_REQUIRE_STORIES260K();
  const TempDir scratch("fsq-cli-badtok");
  const fs::path& dir = scratch.path();
  const fs::path model = dir / "model";
  fs::create_directories(model);
  copy_model_side_files(model);
  fs::copy_file(stories260k_dir() / "model.safetensors", model / "model.safetensors");
  const fs::path tokenizer = model / "tokenizer.json";
  nlohmann::json tj = nlohmann::json::parse(R"({
    "added_tokens": [], "normalizer": null, "pre_tokenizer": null, "post_processor": null, "decoder": null,
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}})");
  const fs::path json = dir / "r.json", calib = dir / "calib.safetensors";
  struct Case {
    std::string name;
    std::function<void(nlohmann::json&)> edit;
    std::string problem;
  };
  const std::vector<Case> cases = {
      {"huge vocab id", [](nlohmann::json& j) { j["model"]["vocab"]["c"] = 4000000000; },
       "model.vocab['c'] = 4000000000 is not a valid token id"},
      {"2^40 added token id",
       [](nlohmann::json& j) { j["added_tokens"] = {{{"id", int64_t{1} << 40}, {"content", "<x>"}}}; },
       "added_tokens[0].id = 1099511627776 is not a valid token id"},
      {"duplicate id", [](nlohmann::json& j) { j["model"]["vocab"]["c"] = 1; }, "token id 1 is given to two tokens"},
      {"merges missing", [](nlohmann::json& j) { j["model"].erase("merges"); }, "model.merges is missing"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    nlohmann::json broken = tj;
    c.edit(broken);
    write_file(tokenizer, broken.dump());
    RunResult eval = run_fsq({"eval", "--model", model.string(), "--data", tinystories_val().string(), "--no-speed",
                              "--max-windows", "1", "--json", json.string()});
    expect_one_line_error(eval, tokenizer.string() + ": " + c.problem);
    RunResult cal = run_fsq({"calibrate", "--model", model.string(), "--data", tinystories_val().string(),
                             "--samples", "1", "--seq-len", "16", "--out", calib.string()});
    expect_one_line_error(cal, tokenizer.string() + ": " + c.problem);
    EXPECT_FALSE(fs::exists(json));
    EXPECT_FALSE(fs::exists(calib));
  }
  // config.json naming a BOS past the vocabulary is refused too.
  write_file(tokenizer, tj.dump());
  nlohmann::json config = read_json(model / "config.json");
  config["bos_token_id"] = 4000000000;
  write_file(model / "config.json", config.dump());
  expect_one_line_error(run_fsq({"eval", "--model", model.string(), "--data", tinystories_val().string(),
                                 "--no-speed", "--max-windows", "1"}),
                        (model / "config.json").string() + ": bos_token_id 4000000000 is not a token");
}

TEST(CliErrors, JsonIntoMissingFolderFailsBeforeWork) {
  FSQ_REQUIRE_STORIES260K();
  RunResult r = run_fsq({"eval", "--model", stories260k_dir().string(), "--speed-only", "--json",
                         "/nonexistent-folder/r.json"});
  expect_one_line_error(r, "--json");
}

TEST(CliErrors, CompareWithDifferentVocabulary) {
  FSQ_REQUIRE_STORIES260K();
  const TempDir scratch("fsq-cli-othertok");
  const fs::path& dir = scratch.path();
  fs::path other = dir / "model";
  fs::create_directories(other);
  for (const char* f : {"config.json", "model.safetensors", "tokenizer_config.json", "special_tokens_map.json"})
    fs::copy_file(stories260k_dir() / f, other / f);
  FSQ_REQUIRE_FIXTURE(testing::llama2_tokenizer(), testing::kHowToStageShared);
  fs::copy_file(testing::llama2_tokenizer(), other / "tokenizer.model");
  RunResult r = run_fsq({"eval", "--model", stories260k_dir().string(), "--compare", other.string(), "--data",
                         tinystories_val().string(), "--max-windows", "1", "--no-speed"});
  expect_one_line_error(r, "tokenizer");
}

// --device cuda on stories260K, whose 172-wide MLP rows the CUDA GEMVs do not take: fsq's
// own CUDA decoder says so before looking for a GPU; a build without the CUDA backend says
// that LibTorch has no CUDA. Either way one line naming the option. (A
// LibTorch with CUDA and a GPU runs the model there instead: then the text comes out.)
TEST(CliErrors, GenerateAndEvalOnCudaSayWhyTheyCannot) {
  FSQ_REQUIRE_STORIES260K();
  const std::vector<std::string> generate = {"generate", "--model", stories260k_dir().string(), "--prompt",
                                             "Once", "-n", "2", "--device"};
  std::vector<std::string> on_cuda = generate, on_cuda1 = generate;
  on_cuda.push_back("cuda");
  on_cuda1.push_back("cuda:1");
  const RunResult r = run_fsq(on_cuda);
  if (r.exit_code == 0) {
    EXPECT_FALSE(r.out.empty());
    GTEST_SKIP() << "this build's LibTorch ran the model on a GPU";
  }
  expect_one_line_error(r, "--device cuda");
  if (r.err.find("CUDA decoder") != std::string::npos) {
    EXPECT_NE(r.err.find("multiples of 8"), std::string::npos) << r.err;
    expect_one_line_error(run_fsq(on_cuda1), "--device cuda:1");
    // fsq eval decides the same way, after loading and before measuring anything.
    const TempDir scratch("fsq-cli-eval-cuda");
    const fs::path& dir = scratch.path();
    const RunResult eval = run_fsq({"eval", "--model", stories260k_dir().string(), "--speed-only", "--device", "cuda",
                                    "--json", (dir / "r.json").string()});
    expect_one_line_error(eval, "fsq's CUDA decoder cannot run this model");
    EXPECT_FALSE(fs::exists(dir / "r.json"));
  }
}

}  // namespace
}  // namespace fsq::clitest
