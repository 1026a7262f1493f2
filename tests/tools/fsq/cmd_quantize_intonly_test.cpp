// fsq quantize --method intonly end to end on stories260K: the checkpoint evaluates with
// --compare against the unquantized model through the integer-only decoder layers (bos-window,
// the first 32 x 256 tokens of tinystories_val; calibration on its last 200 KB), its report
// lists what ran in integers and what in floating point, speed is skipped with a reason
// rather than run on a KV cache the path does not have (generate decodes on the float path),
// and --act-quant per-token is refused.
#include <gtest/gtest.h>

#include <algorithm>

#include "cli_support.h"
#include "stories260k_quantize_suite.h"

namespace fsq::clitest {
namespace {
namespace fs = std::filesystem;

// Mean KL measured 2026-11-25: integer-only 0.00577 (top-1 0.956), SmoothQuant w8a8static (the
// same weights and linear input scales on the float path) 0.00574 (top-1 0.961); with int8 q
// and k the integer path was at 0.0143, which the factor bound catches. The absolute bound
// catches a broken integer path (a wrong scale gives KL > 1).
constexpr double kMaxIntonlyKl = 0.05;
constexpr double kMaxKlFactorVsSmoothQuantStatic = 1.5;
constexpr int64_t kIntonlyStoriesLinears = 5 * 7;  // 5 layers x q, k, v, o, gate, up, down

class CliQuantizeIntonly : public Stories260kQuantizeSuite {};

TEST_F(CliQuantizeIntonly, RunsInIntegersAndStaysCloseToFp) {
  FSQ_REQUIRE_STORIES260K();
  const fs::path out = dir_ / "intonly", sq = dir_ / "sq-static";
  RunResult r = quantize(out, {"--method", "intonly"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = quantize(sq, {"--method", "smoothquant", "--act-quant", "per-tensor"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json manifest = read_json(out / "fsq.json");
  EXPECT_EQ(manifest["run_options"]["quant_type"], "w8a8static");
  EXPECT_EQ(manifest["run_options"]["alpha"], 0.5);
  for (int i = 0; i < 5; ++i)
    EXPECT_TRUE(manifest["tensor_sha256"].contains("model.layers." + std::to_string(i) + ".intonly_absmax")) << i;

  const Quality q = evaluate_against_stories260k(out);
  const Quality s = evaluate_against_stories260k(sq);
  std::printf("intonly: mean KL %.5f, top-1 %.4f, ppl %.4f; smoothquant w8a8static: mean KL %.5f, top-1 %.4f\n", q.kl,
              q.top1, q.ppl, s.kl, s.top1);
  EXPECT_LT(q.kl, kMaxIntonlyKl);
  EXPECT_LT(q.kl, kMaxKlFactorVsSmoothQuantStatic * s.kl);

  const nlohmann::json report = read_json(out.string() + ".eval.json");
  const nlohmann::json& model = report["model"];
  const std::vector<std::string> ints = model["integer_only"], floats = model["float"];
  for (const char* op : {"rmsnorm", "int8 matmul", "rope", "attention scores", "softmax", "silu", "residual"})
    EXPECT_TRUE(std::any_of(ints.begin(), ints.end(), [&](const std::string& s) { return s.find(op) != s.npos; }))
        << op << " in " << model["integer_only"];
  ASSERT_EQ(floats.size(), 3u) << model["float"];
  EXPECT_EQ(floats[0].rfind("embedding", 0), 0u);
  EXPECT_EQ(floats[1], "final norm");
  EXPECT_EQ(floats[2], "lm_head");
  EXPECT_EQ(model["matmuls"].value("w8a8static intonly, integer-only: int8 matmul, int32 requantized", int64_t{0}),
            kIntonlyStoriesLinears)
      << model["matmuls"];
  // The SmoothQuant checkpoint runs on the float path and says nothing of integer ops.
  EXPECT_FALSE(read_json(sq.string() + ".eval.json")["model"].contains("integer_only"));
}

TEST_F(CliQuantizeIntonly, EvalSkipsSpeedWithAReason) {
  FSQ_REQUIRE_STORIES260K();
  const fs::path out = dir_ / "intonly-speed";
  RunResult r = quantize(out, {"--method", "intonly"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path json = dir_ / "speed.json";
  r = run_fsq({"eval", "--model", out.string(), "--data", tinystories_val().string(), "--seq-len", "64",
               "--max-windows", "1", "--threads", "1", "--progress", "off", "--json", json.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("speed      skipped: the integer-only path evaluates whole windows"), std::string::npos)
      << r.out;
  const nlohmann::json report = read_json(json);
  EXPECT_FALSE(report["speed"].contains("decode"));
  EXPECT_NE(report["speed"]["skipped"].get<std::string>().find("KV cache"), std::string::npos);
  // Generation decodes with a KV cache: it runs the checkpoint's float path and says so.
  r = run_fsq({"generate", "--model", out.string(), "--prompt", "Once upon a time", "-n", "8", "--threads", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("generation runs its w8a8static float path"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.rfind("Once upon a time", 0), 0u) << r.out;
}

TEST_F(CliQuantizeIntonly, RefusesDynamicActivations) {
  FSQ_REQUIRE_STORIES260K();
  const fs::path out = dir_ / "refused";
  RunResult r = quantize(out, {"--method", "intonly", "--act-quant", "per-token"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("--act-quant: --method intonly quantizes activations statically: only per-tensor"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace fsq::clitest
