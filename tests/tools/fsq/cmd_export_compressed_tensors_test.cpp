// fsq export --format compressed-tensors and fsq generate --logits end to end on stories260K:
// an RTN w4g32 checkpoint (down_proj falls back to per-channel, so two config groups) exports
// with its notes, a mixed plan checks against the checkpoint and emits a vLLM launch script,
// bad requests fail with one line before anything is written. The export's layout and its
// loading by transformers are checked by scripts/check-compressed-tensors.sh (not in CI: it
// needs PyPI's torch).
#include <gtest/gtest.h>

#include <fstream>

#include "cli_support.h"
#include "formats/safetensors.h"

namespace fsq::clitest {
namespace {
namespace fs = std::filesystem;

class CliExportCompressedTensors : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(stories260k_dir())) return;  // each test starts with FSQ_REQUIRE_STORIES260K
    dir_ = make_temp_dir_caller_removes("fsq-cli-export-ct");
    const std::string model = stories260k_dir().string();
    quantize_ok({"--method", "rtn", "--bits", "4", "--group-size", "32", "--out", (dir_ / "w4").string()});
    // Layers 0-1 at 8 bits, 2-4 at 4: the widths fsq quantize --plan gives them.
    write_plan(dir_ / "plan.json", {8, 8, 4, 4, 4}, {{"a", 2}, {"b", 0}, {"c", 3}});
    quantize_ok({"--method", "rtn", "--group-size", "32", "--sym", "--plan", (dir_ / "plan.json").string(), "--out",
                 (dir_ / "mixed").string()});
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  static void quantize_ok(std::vector<std::string> extra) {
    std::vector<std::string> a = {"quantize", "--model", stories260k_dir().string(), "--threads", "1", "--progress",
                                  "off"};
    a.insert(a.end(), extra.begin(), extra.end());
    const RunResult r = run_fsq(a);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  static void write_plan(const fs::path& path, const std::vector<int>& bits,
                         const std::vector<std::pair<std::string, int>>& stages) {
    nlohmann::json plan = {{"bits_per_layer", bits}, {"stages", nlohmann::json::array()}};
    for (const auto& [node, layers] : stages)
      plan["stages"].push_back({{"device", "CPU-core"}, {"node", node}, {"layers", layers}});
    std::ofstream(path) << nlohmann::json{{"plan", plan}}.dump();
  }

  static RunResult export_ct(const std::string& in, const std::string& out, std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {"export", "--format", "compressed-tensors"};
    a.insert(a.end(), extra.begin(), extra.end());
    a.push_back((dir_ / in).string());
    a.push_back((dir_ / out).string());
    return run_fsq(a);
  }

  static inline fs::path dir_;
};

TEST_F(CliExportCompressedTensors, ExportsEachSchemeAsAConfigGroup) {
  FSQ_REQUIRE_STORIES260K();
  const RunResult r = export_ct("w4", "w4-ct");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("35 linears: w4g32a, w4pca"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("note: asymmetric with several schemes"), std::string::npos) << r.err;
  const nlohmann::json qc = read_json(dir_ / "w4-ct" / "config.json")["quantization_config"];
  ASSERT_EQ(qc["config_groups"].size(), 2u);
  EXPECT_EQ(qc["config_groups"]["group_1"]["weights"]["strategy"], "channel");
  EXPECT_EQ(qc["config_groups"]["group_1"]["targets"].size(), 5u);  // the five down_proj
  const auto weights = SafetensorsFile::open(dir_ / "w4-ct" / "model.safetensors");
  const TensorView* zp = weights->find("model.layers.0.mlp.down_proj.weight_zero_point");
  ASSERT_NE(zp, nullptr);
  EXPECT_EQ(zp->shape, (std::vector<int64_t>{64 * 4 / 32, 1}));
}

TEST_F(CliExportCompressedTensors, PlanIsCheckedAndLaunchedOnVllm) {
  FSQ_REQUIRE_STORIES260K();
  const std::string plan = (dir_ / "plan.json").string(), launch = (dir_ / "serve.sh").string();
  const RunResult r = export_ct("mixed", "mixed-ct", {"--plan", plan, "--emit-launch", launch});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("pipeline-parallel 2, VLLM_PP_LAYER_PARTITION=2,3"), std::string::npos) << r.out;
  std::ifstream in(launch);
  const std::string script((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(script.find("--pipeline-parallel-size 2"), std::string::npos) << script;
  EXPECT_EQ(std::system(("bash -n '" + launch + "'").c_str()), 0);

  // The RTN w4 checkpoint was not quantized with this plan.
  const RunResult wrong = export_ct("w4", "never", {"--plan", plan});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_EQ(lines(wrong.err), 1u) << wrong.err;
  EXPECT_NE(wrong.err.find("gives layer 0 8 bits"), std::string::npos) << wrong.err;
  EXPECT_FALSE(fs::exists(dir_ / "never"));

  write_plan(dir_ / "plan6.json", {4, 4, 4, 4, 4, 4}, {});
  const RunResult layers = export_ct("w4", "never", {"--plan", (dir_ / "plan6.json").string()});
  EXPECT_NE(layers.err.find("gives widths for 6 layers"), std::string::npos) << layers.err;
  EXPECT_FALSE(fs::exists(dir_ / "never"));

  // Pipeline stages hold whole layers: a per-linear plan (fsq plan --per-linear) is refused.
  std::ofstream(dir_ / "per-linear.json") << R"({"plan": {"bits_per_linear": [{"q_proj": 4}]}})";
  const RunResult per_linear = export_ct("w4", "never", {"--plan", (dir_ / "per-linear.json").string()});
  EXPECT_EQ(per_linear.exit_code, 1);
  EXPECT_EQ(lines(per_linear.err), 1u) << per_linear.err;
  EXPECT_NE(per_linear.err.find("is a per-linear plan"), std::string::npos) << per_linear.err;
  EXPECT_FALSE(fs::exists(dir_ / "never"));
}

TEST_F(CliExportCompressedTensors, BadRequestsFailBeforeWriting) {
  FSQ_REQUIRE_STORIES260K();
  for (const auto& extra : std::vector<std::vector<std::string>>{
           {"--type", "Q4_0"}, {"--emit-launch", (dir_ / "x.sh").string()}, {"--awq"}}) {
    const RunResult r = export_ct("w4", "never", extra);
    EXPECT_NE(r.exit_code, 0) << extra[0];
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "never")) << extra[0];
  }
  const RunResult dtype = run_fsq({"export", "--format", "autoawq", "--model-dtype", "float32", (dir_ / "w4").string(),
                                   (dir_ / "never").string()});
  EXPECT_NE(dtype.err.find("--model-dtype"), std::string::npos) << dtype.err;
  EXPECT_FALSE(fs::exists(dir_ / "never"));
}

// --logits holds the prefill logits of every prompt position: the last row's argmax is the
// first generated token, and the ids are the prompt and the continuation.
TEST_F(CliExportCompressedTensors, GenerateWritesThePromptLogits) {
  FSQ_REQUIRE_STORIES260K();
  const fs::path path = dir_ / "logits.safetensors";
  const RunResult r = run_fsq({"generate", "--model", (dir_ / "w4").string(), "--prompt", "Once upon a time", "-n", "8",
                               "--threads", "1", "--logits", path.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto f = SafetensorsFile::open(path);
  const TensorView* logits = f->find("logits");
  const TensorView* ids = f->find("ids");
  ASSERT_TRUE(logits != nullptr && ids != nullptr);
  ASSERT_EQ(logits->shape.size(), 2u);
  EXPECT_EQ(logits->shape[1], 512);  // stories260K's vocabulary
  const int64_t prompt = logits->shape[0];
  ASSERT_GT(ids->shape[0], prompt);
  const float* last = reinterpret_cast<const float*>(logits->data) + (prompt - 1) * 512;
  const int32_t first_new = reinterpret_cast<const int32_t*>(ids->data)[prompt];
  EXPECT_EQ(std::max_element(last, last + 512) - last, first_new);

  const RunResult again = run_fsq({"generate", "--model", (dir_ / "w4").string(), "--prompt", "Once", "-n", "1",
                                   "--threads", "1", "--logits", path.string()});
  EXPECT_NE(again.exit_code, 0);  // an existing file needs --force
  EXPECT_NE(again.err.find("--force"), std::string::npos) << again.err;
}

}  // namespace
}  // namespace fsq::clitest
