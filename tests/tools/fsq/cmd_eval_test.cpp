// fsq eval / generate / inspect on the real stories260K against shared/models/MANIFEST.md.
#include <gtest/gtest.h>

#include <cmath>

#include "cli_support.h"

namespace fsq::clitest {
namespace {

// MANIFEST: bos-window, seq_len 256 on tinystories_val.txt.
constexpr double kManifestPpl = 5.6986;
constexpr double kPplRelTol = 1e-3;  // "within 0.1%"
constexpr int64_t kManifestWindows = 1541;
constexpr int64_t kManifestScored = 392955;
constexpr int64_t kManifestFileTokens = 393012;
constexpr int64_t kStoriesParams = 260032;
constexpr const char* kGreedyText =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park. One day, she saw a big, red ball.";

// One thread: OpenMP threads on a machine busy with other work slow this tiny model 10x.
TEST(CliEval, BosWindowPerplexityMatchesManifest) {
  FSQ_REQUIRE_STORIES260K();
  const TempDir scratch("fsq-cli-ppl");
  const auto& dir = scratch.path();
  auto json = dir / "report.json";
  RunResult r = run_fsq({"eval", "--model", stories260k_dir().string(), "--data", tinystories_val().string(),
                         "--protocol", "bos-window", "--seq-len", "256", "--no-speed", "--progress",
                         "off", "--threads", "1", "--json", json.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = read_json(json);
  const auto& p = j["perplexity"];
  EXPECT_EQ(p["windows"].get<int64_t>(), kManifestWindows);
  EXPECT_EQ(p["scored_tokens"].get<int64_t>(), kManifestScored);
  EXPECT_EQ(j["dataset"]["tokens"].get<int64_t>(), kManifestFileTokens);
  EXPECT_NEAR(p["ppl"].get<double>(), kManifestPpl, kManifestPpl * kPplRelTol);
  EXPECT_EQ(p["protocol"], "bos-window");
  EXPECT_EQ(p["seq_len"], 256);
  EXPECT_EQ(p["stride"], 255);
  EXPECT_EQ(j["model"]["parameters"].get<int64_t>(), kStoriesParams);
  EXPECT_EQ(j["dataset"]["sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(j["tokenizer"]["sha256"].get<std::string>(),
            "fec6aa960a1fb3ebf71d26f9b0e486afcbd76c34cf0fbfb93e21126ca9f778d3");
  EXPECT_FALSE(j.contains("speed"));
  EXPECT_NE(r.out.find("perplexity"), std::string::npos) << r.out;
}

TEST(CliEval, DefaultProtocolIsGptqCappedAtModelMaximum) {
  FSQ_REQUIRE_STORIES260K();
  const TempDir scratch("fsq-cli-gptq");
  const auto& dir = scratch.path();
  auto json = dir / "r.json";
  RunResult r = run_fsq({"eval", "--model", stories260k_dir().string(), "--data", tinystories_val().string(),
                         "--max-windows", "4", "--no-speed", "--progress", "off", "--json", json.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = read_json(json);
  EXPECT_EQ(j["perplexity"]["protocol"], "gptq");
  EXPECT_EQ(j["perplexity"]["seq_len"], 512);  // min(2048, max_position_embeddings)
  EXPECT_EQ(j["perplexity"]["windows"], 4);
  EXPECT_EQ(j["perplexity"]["scored_tokens"], 4 * 511);
  // add_bos_token is true for stories260K: GPTQ stream = BOS + text.
  EXPECT_EQ(j["perplexity"]["total_windows"], (kManifestFileTokens + 1) / 512);
}

TEST(CliEval, SpeedOnlyReportsAllMeasurements) {
  FSQ_REQUIRE_STORIES260K();
  const TempDir scratch("fsq-cli-speed");
  const auto& dir = scratch.path();
  auto json = dir / "r.json";
  RunResult r = run_fsq({"eval", "--model", stories260k_dir().string(), "--speed-only", "--json", json.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = read_json(json);
  ASSERT_TRUE(j.contains("speed"));
  EXPECT_FALSE(j.contains("perplexity"));
  ASSERT_EQ(j["speed"]["prefill"].size(), 2u);
  EXPECT_EQ(j["speed"]["prefill"][0]["tokens"], 128);
  EXPECT_EQ(j["speed"]["prefill"][1]["tokens"], 512);
  ASSERT_EQ(j["speed"]["decode"].size(), 2u);
  EXPECT_EQ(j["speed"]["decode"][0]["batch"], 1);
  EXPECT_EQ(j["speed"]["decode"][1]["batch"], 8);
  for (const auto& s : j["speed"]["prefill"]) EXPECT_GT(s["tokens_per_s"].get<double>(), 0.0);
  for (const auto& s : j["speed"]["decode"]) EXPECT_GT(s["tokens_per_s"].get<double>(), 0.0);
  EXPECT_GT(j["peak_rss_bytes"].get<int64_t>(), 0);
  EXPECT_GT(j["model"]["load_seconds"].get<double>(), 0.0);
  // The model's weights sit in huge-page weight memory (runtime/weight_memory.h).
  EXPECT_GT(j["weight_memory"]["mapped_bytes"].get<int64_t>(), 0);
  const std::string thp = j["weight_memory"]["transparent_huge_pages"].get<std::string>();
  EXPECT_TRUE(thp == "always" || thp == "madvise" || thp == "never" || thp == "unavailable") << thp;
}

// --prefill-lengths, --decode-batches and --decode-steps pick the measurements (a 7B model
// spends minutes on each default one): exactly those are timed and reported.
TEST(CliEval, SpeedOptionsChooseWhatIsTimed) {
  FSQ_REQUIRE_STORIES260K();
  const TempDir scratch("fsq-cli-speed-options");
  const auto json = scratch / "r.json";
  RunResult r = run_fsq({"eval", "--model", stories260k_dir().string(), "--speed-only", "--prefill-lengths", "64,32",
                         "--decode-batches", "2", "--decode-steps", "5", "--json", json.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json speed = read_json(json)["speed"];
  ASSERT_EQ(speed["prefill"].size(), 2u);
  EXPECT_EQ(speed["prefill"][0]["tokens"], 64);
  EXPECT_EQ(speed["prefill"][1]["tokens"], 32);
  ASSERT_EQ(speed["decode"].size(), 1u);
  EXPECT_EQ(speed["decode"][0]["batch"], 2);
  EXPECT_EQ(speed["decode"][0]["steps"], 5);
  RunResult bad = run_fsq({"eval", "--model", stories260k_dir().string(), "--speed-only", "--decode-batches", "9"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_EQ(lines(bad.err), 1u) << bad.err;
}

// fsq re-executes itself with briefly spinning, then sleeping, idle workers
// (tools/fsq/wait_policy.h) unless the user chose: the report states what the run used.
TEST(CliEval, IdleWorkersSleepUnlessTheUserChoseOtherwise) {
  FSQ_REQUIRE_STORIES260K();
  const TempDir scratch("fsq-cli-waits");
  const std::filesystem::path& dir = scratch.path();
  auto waits = [&](const char* omp) {
    unsetenv("OPENBLAS_THREAD_TIMEOUT");
    unsetenv("GOMP_SPINCOUNT");
    unsetenv("FSQ_WAIT_POLICY_APPLIED");
    if (omp) setenv("OMP_WAIT_POLICY", omp, 1); else unsetenv("OMP_WAIT_POLICY");
    RunResult r = run_fsq({"eval", "--model", stories260k_dir().string(), "--data", tinystories_val().string(),
                           "--seq-len", "64", "--max-windows", "1", "--no-speed", "--threads", "1",
                           "--json", (dir / "r.json").string(), "--force"});
    unsetenv("OMP_WAIT_POLICY");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return read_json(dir / "r.json").value("thread_waits", std::string("missing"));
  };
  EXPECT_EQ(waits(nullptr), "OMP_WAIT_POLICY unset GOMP_SPINCOUNT=3000 OPENBLAS_THREAD_TIMEOUT=4");
  // The user's policy stands: GOMP_SPINCOUNT would override it.
  EXPECT_EQ(waits("ACTIVE"), "OMP_WAIT_POLICY=ACTIVE GOMP_SPINCOUNT unset OPENBLAS_THREAD_TIMEOUT=4");
}

// The report says which decode path ran: the fast one for an f32 model, ATen (and why) for
// bf16 compute.
TEST(CliEval, ReportSaysWhichDecodePathRan) {
  FSQ_REQUIRE_STORIES260K();
  const TempDir scratch("fsq-cli-decode-path");
  const std::filesystem::path& dir = scratch.path();
  auto path_of = [&](const char* dtype) {
    RunResult r = run_fsq({"eval", "--model", stories260k_dir().string(), "--data", tinystories_val().string(),
                           "--seq-len", "64", "--max-windows", "1", "--no-speed", "--threads", "1", "--dtype", dtype,
                           "--json", (dir / "r.json").string(), "--force"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("decoding   "), std::string::npos) << r.out;
    return read_json(dir / "r.json")["model"].value("decode_path", std::string("missing"));
  };
  EXPECT_EQ(path_of("f32").rfind("fast path", 0), 0u);
  EXPECT_EQ(path_of("bf16"), "aten: the compute dtype is not f32");
}

TEST(CliGenerate, GreedyMatchesManifest) {
  FSQ_REQUIRE_STORIES260K();
  RunResult r = run_fsq({"generate", "--model", stories260k_dir().string(), "--prompt", "Once upon a time",
                         "-n", "40", "--ids"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(kGreedyText), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ids: [1, 403, 407, 261, 378, 432, 383"), std::string::npos) << r.out;
}

TEST(CliInspect, CheckpointDirAndFile) {
  FSQ_REQUIRE_STORIES260K();
  RunResult text = run_fsq({"inspect", stories260k_dir().string()});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("parameters 260032"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("model.layers.2.mlp.down_proj.weight"), std::string::npos);
  RunResult js = run_fsq({"inspect", (stories260k_dir() / "model.safetensors").string(), "--json"});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  nlohmann::json j = nlohmann::json::parse(js.out);
  EXPECT_EQ(j["parameters"].get<int64_t>(), kStoriesParams);
  EXPECT_EQ(j["tensor_count"], 47);
  EXPECT_EQ(j["sha256"], "c549afd8464a1250200b5338d39d23d0bf096c7f6578944268d40512c133daa6");
}

TEST(CliMeta, VersionAndHelp) {
  RunResult v = run_fsq({"--version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_EQ(v.out.rfind("fsq ", 0), 0u) << v.out;
  for (const char* sub : {"eval", "inspect", "generate"}) {
    RunResult h = run_fsq({sub, "--help"});
    EXPECT_EQ(h.exit_code, 0) << sub;
    EXPECT_NE(h.out.find("Examples:"), std::string::npos) << sub << ":\n" << h.out;
  }
}

}  // namespace
}  // namespace fsq::clitest
