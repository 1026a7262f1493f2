// fsq on the real SmolLM2-135M GGUF: convert to a Hugging Face folder, and the same
// perplexity from the folder as from the .gguf. Skipped (failed under CI) when the GGUF
// is not fetched.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli_support.h"
#include "fixtures.h"

namespace fsq::clitest {
namespace {

namespace fs = std::filesystem;

constexpr double kSamePerplexity = 1e-9;  // f32 weights both ways: only rounding noise allowed

TEST(CliGguf, ConvertThenEvalMatchesEvalOnGguf) {
  FSQ_REQUIRE_SMOLLM2();
  const fs::path gguf = testing::smollm2_gguf();
  const TempDir scratch("fsq-cli-gguf-convert");
  const fs::path& dir = scratch.path();
  const fs::path out = dir / "smollm2-hf";
  RunResult conv = run_fsq({"convert", "--from", "gguf", gguf.string(), "--out", out.string(), "--dtype", "f32"});
  ASSERT_EQ(conv.exit_code, 0) << conv.err;
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                        "generation_config.json"})
    EXPECT_TRUE(fs::exists(out / f)) << f;

  auto eval = [&](const fs::path& model, const std::string& json) {
    RunResult r = run_fsq({"eval", "--model", model.string(), "--data", tinystories_val().string(), "--seq-len",
                           "256", "--max-windows", "2", "--no-speed", "--threads", "1", "--progress", "off",
                           "--json", (dir / json).string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return read_json(dir / json);
  };
  nlohmann::json a = eval(gguf, "gguf.json"), b = eval(out, "hf.json");
  const double ppl_a = a["perplexity"]["ppl"].get<double>(), ppl_b = b["perplexity"]["ppl"].get<double>();
  EXPECT_NEAR(ppl_a, ppl_b, kSamePerplexity * ppl_a);
  EXPECT_EQ(a["perplexity"]["scored_tokens"], b["perplexity"]["scored_tokens"]);
  EXPECT_GT(ppl_a, 1.0);
}

TEST(CliGguf, ConvertRefusesNonEmptyOutputAndLeavesNothing) {
  FSQ_REQUIRE_SMOLLM2();
  const TempDir scratch("fsq-cli-gguf-convert-busy");
  const fs::path& dir = scratch.path();
  fs::create_directories(dir / "busy");
  std::ofstream(dir / "busy" / "keep.txt") << "x";
  RunResult r = run_fsq({"convert", "--from", "gguf", testing::smollm2_gguf().string(), "--out", (dir / "busy").string()});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("not empty"), std::string::npos) << r.err;
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 1u);  // no staging folder left beside it
}

TEST(CliGguf, InspectShowsStoredTypesAndConfig) {
  FSQ_REQUIRE_SMOLLM2();
  RunResult r = run_fsq({"inspect", testing::smollm2_gguf().string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  // shared/models/MANIFEST.md section 3: 30 blocks, Q4_1 linears, Q8_0 embedding, tied head.
  EXPECT_EQ(j["tensor_count"], 272);
  EXPECT_EQ(j["dtypes"]["Q4_1"]["tensors"], 210);
  EXPECT_EQ(j["dtypes"]["Q8_0"]["tensors"], 1);
  EXPECT_EQ(j["config"]["num_hidden_layers"], 30);
  EXPECT_EQ(j["config"]["num_key_value_heads"], 3);
  EXPECT_EQ(j["config"]["tie_word_embeddings"], true);
  EXPECT_EQ(j["sha256"], "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53");
}

}  // namespace
}  // namespace fsq::clitest
