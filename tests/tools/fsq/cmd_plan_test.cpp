// fsq plan end to end: a paper cluster from a preset, a model folder's config.json, plan.json
// written atomically, and one-line errors for impossible requests.
#include <gtest/gtest.h>

#include <fstream>

#include "cli_support.h"
#include "text_files.h"

namespace fsq::clitest {
namespace {
namespace fs = std::filesystem;

using testing::read_file;
using testing::write_file;

void expect_plan_error(const RunResult& r, const std::string& mentions) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find(mentions), std::string::npos) << r.err;
}

constexpr const char* kPaperCluster =
    R"({"devices": [{"type": "T4-16G", "count": 3, "node": "a"}, {"type": "V100-32G", "node": "b"}]})";

TEST(CliPlan, PaperClusterPlanBeatsOrMatchesBothBaselines) {
  const TempDir scratch("fsq-cli-plan");
  const fs::path& dir = scratch.path();
  write_file(dir / "cluster.json", kPaperCluster);
  RunResult r = run_fsq({"plan", "--preset", "opt-30b", "--cluster", (dir / "cluster.json").string(), "--prompt-len", "512",
                         "--new-tokens", "100", "--batch", "32", "--out", (dir / "plan.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("opt-30b on 3x T4-16G + 1x V100-32G"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pipeedge"), std::string::npos) << r.out;
  nlohmann::json j = nlohmann::json::parse(read_file(dir / "plan.json"));
  const auto& plan = j["plan"];
  ASSERT_TRUE(plan["found"].get<bool>());
  EXPECT_EQ(plan["device_order"].size(), 4u);
  int layers = 0;
  for (const auto& n : plan["layers_per_stage"]) layers += n.get<int>();
  EXPECT_EQ(layers, 48);
  EXPECT_EQ(plan["bits_per_layer"].size(), 48u);
  for (const auto& s : plan["stages"]) EXPECT_GE(s["headroom_bytes"].get<double>(), 0) << s.dump();
  EXPECT_GE(j["speedup_vs_pipeedge"].get<double>(), 1.0);
  EXPECT_LE(plan["sum_omega"].get<double>(), j["baselines"]["pipeedge"]["sum_omega"].get<double>() * (1 + 1e-9));
  EXPECT_EQ(j["search"]["orders_total"].get<int>(), 4);
  // Without --force the plan is not replaced.
  RunResult again = run_fsq({"plan", "--preset", "opt-30b", "--cluster", (dir / "cluster.json").string(), "--out",
                             (dir / "plan.json").string()});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.err.find("--force"), std::string::npos) << again.err;
}

TEST(CliPlan, ModelFolderOnOneGpuWithTargetBits) {
  const TempDir scratch("fsq-cli-plan-model");
  const fs::path& dir = scratch.path();
  write_file(dir / "config.json",
             R"({"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096, "intermediate_size": 11008,
                 "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32000})");
  RunResult r = run_fsq({"plan", "--model", dir.string(), "--gpu", "L4", "--batch", "8", "--target-bits", "3.5",
                         "--theta", "1e-6", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_LE(j["plan"]["avg_bits"].get<double>(), 3.5 + 1e-9);
  EXPECT_EQ(j["plan"]["bits_per_layer"].size(), 32u);
  EXPECT_EQ(j["cluster"], "1x L4");
}

TEST(CliPlan, ImpossibleRequestsGetOneLine) {
  const TempDir scratch("fsq-cli-plan-errors");
  const fs::path& dir = scratch.path();
  write_file(dir / "bad.json", R"({"devices": [{"type": "T4-16G"}, {"type": "Z9000"}]})");
  expect_plan_error(run_fsq({"plan", "--preset", "opt-13b", "--cluster", (dir / "bad.json").string()}),
                        (dir / "bad.json").string() + ": devices[1]: unknown GPU type 'Z9000'");
  expect_plan_error(run_fsq({"plan", "--preset", "opt-66b", "--gpu", "T4-16G", "--out", (dir / "p.json").string()}),
                        "GiB missing");
  EXPECT_FALSE(fs::exists(dir / "p.json"));
  expect_plan_error(run_fsq({"plan", "--preset", "opt-13b", "--gpu", "A10", "--model", dir.string()}),
                        "--model DIR or --preset NAME");
  expect_plan_error(run_fsq({"plan", "--preset", "opt-13b", "--gpu", "A10", "--per-linear"}),
                        "--per-linear: cluster plans place whole layers");
  expect_plan_error(run_fsq({"plan", "--model", dir.string(), "--target-bits", "4", "--per-linear"}),
                        "--per-linear: needs the variance indicator: give --calib FILE");
}

TEST(CliPlan, ListsGpusAndPresets) {
  RunResult r = run_fsq({"plan", "--list-gpus", "--list-presets"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("A800-80G"), std::string::npos);
  EXPECT_NE(r.out.find("bloom-176b"), std::string::npos);
}

}  // namespace
}  // namespace fsq::clitest
