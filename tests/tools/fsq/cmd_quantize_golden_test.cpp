// The bytes every quantize method writes on stories260K, against digests recorded before the
// quantize pipeline was rebuilt around method.h (tests/data/quantize/golden_digests.json): a
// refactor of the pipeline must not move a single byte. Each case is one checkpoint (16 x 256
// calibration tokens from the tail of tinystories_val, 1 thread); its digest covers every
// file but fsq.json's producer and calibration paths.
//
// Recorded 2026-12-07 by fsq bf8b28d (the commit before the rebuild) on a 2-core AMD EPYC
// with AVX-512. The float arithmetic is pinned to AVX2 for the runs (fsq's kernels, ATen,
// OpenBLAS's Haswell kernels, oneDNN), so that a machine with AVX-512 computes what an
// AVX2-only one does: unpinned, OpenBLAS's and oneDNN's AVX-512 kernels each moved the bytes
// of every calibrated method on that machine (the data-free rtn cases did not move).
// FSQ_GOLDEN_RECORD=1 rewrites the digests file instead of comparing (only after a change
// that is meant to change the bytes; say why in the commit).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "common/sha256.h"
#include "stories260k_quantize_suite.h"
#include "text_files.h"

namespace fsq::clitest {
namespace {
namespace fs = std::filesystem;

const fs::path kDigestsFile = fs::path(FSQ_SOURCE_DIR) / "tests/data/quantize/golden_digests.json";

struct GoldenCase {
  std::string name;
  std::vector<std::string> options;
  nlohmann::json plan = nullptr;  // a plan file to pass as --plan
  bool stats_file = false;        // --calib from fsq calibrate instead of --calib-data
};

nlohmann::json per_linear_plan() {
  const nlohmann::json all16 = {{"q_proj", 16}, {"k_proj", 16}, {"v_proj", 16}, {"o_proj", 16},
                                {"gate_proj", 16}, {"up_proj", 16}, {"down_proj", 16}};
  const nlohmann::json mixed = {{"q_proj", 8}, {"k_proj", 8}, {"v_proj", 3}, {"o_proj", 4},
                                {"gate_proj", 16}, {"up_proj", 8}, {"down_proj", 3}};
  const nlohmann::json lut4 = {{"q_proj", 4}, {"k_proj", 4}, {"v_proj", 4}, {"o_proj", 4},
                               {"gate_proj", 4}, {"up_proj", 4}, {"down_proj", 4}};
  return {{"plan", {{"bits_per_linear", {all16, mixed, lut4, mixed, lut4}}}}};
}

std::vector<GoldenCase> golden_cases() {
  return {
      {"rtn-w4g32", {"--method", "rtn", "--bits", "4", "--group-size", "32"}},
      {"rtn-w3g32-gptq", {"--method", "rtn", "--bits", "3", "--group-size", "32", "--gptq"}},
      {"awq-w4g32", {"--method", "awq", "--bits", "4", "--group-size", "32"}},
      {"awq-w3g32-gptq-fp-inputs",
       {"--method", "awq", "--bits", "3", "--group-size", "32", "--gptq", "--layer-inputs", "fp"}},
      {"awq-plan-16-8-3-4-2", {"--method", "awq", "--group-size", "32"},
       {{"plan", {{"bits_per_layer", {16, 8, 3, 4, 2}}}}}},
      {"squeezellm-4", {"--method", "squeezellm", "--bits", "4"}},
      {"squeezellm-3-gptq", {"--method", "squeezellm", "--bits", "3", "--gptq"}},
      {"squeezellm-4-unweighted", {"--method", "squeezellm", "--bits", "4", "--unweighted", "--sensitive-pct", "0"}},
      {"squeezellm-plan-gptq", {"--method", "squeezellm", "--bits", "4", "--group-size", "32", "--gptq"},
       per_linear_plan()},
      {"smoothquant-0.5", {"--method", "smoothquant", "--alpha", "0.5"}},
      {"smoothquant-auto-tensor-gptq",
       {"--method", "smoothquant", "--alpha", "auto", "--act-quant", "per-tensor", "--gptq"}},
      {"smoothquant-stats-file", {"--method", "smoothquant", "--alpha", "0.5"}, nullptr, true},
      {"w8a8", {"--method", "w8a8"}},
      {"intonly-0.7", {"--method", "intonly", "--alpha", "0.7"}},
      {"rtn-w4g32-head4", {"--method", "rtn", "--bits", "4", "--group-size", "32", "--head-bits", "4"}},
  };
}

// Every file's sha256 (fsq.json without the producer and calibration paths, which name this
// build and this run's temporary folder).
std::map<std::string, std::string> checkpoint_digests(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    const std::string name = fs::relative(e.path(), dir).string();
    if (name == "fsq.json") {
      nlohmann::json manifest = nlohmann::json::parse(testing::read_file(e.path()));
      manifest.erase("producer");
      manifest.erase("calibration");
      out[name] = sha256_hex(manifest.dump());
    } else {
      out[name] = sha256_file(e.path());
    }
  }
  return out;
}

// Pins the float kernels every child fsq process picks to AVX2.
void pin_arithmetic_to_avx2() {
  setenv("FSQ_CPU_ISA", "avx2", 1);
  setenv("ATEN_CPU_CAPABILITY", "avx2", 1);
  setenv("OPENBLAS_CORETYPE", "Haswell", 1);
  setenv("ONEDNN_MAX_CPU_ISA", "AVX2", 1);
  setenv("DNNL_MAX_CPU_ISA", "AVX2", 1);
}

class CliQuantizeGolden : public Stories260kQuantizeSuite {};

TEST_F(CliQuantizeGolden, EveryMethodWritesTheRecordedBytes) {
  FSQ_REQUIRE_STORIES260K();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    GTEST_SKIP() << "this CPU has no AVX2/FMA: the recorded bytes were computed with AVX2 kernels";
  pin_arithmetic_to_avx2();
  const bool record = std::getenv("FSQ_GOLDEN_RECORD") != nullptr;
  const nlohmann::json recorded =
      record ? nlohmann::json::object() : nlohmann::json::parse(testing::read_file(kDigestsFile));

  const fs::path stats = dir_ / "stats.safetensors";
  const RunResult calibrate =
      run_fsq({"calibrate", "--model", stories260k_dir().string(), "--data", (dir_ / "calib.txt").string(), "--out",
               stats.string(), "--samples", "16", "--seq-len", "256", "--threads", "1", "--progress", "off"});
  ASSERT_EQ(calibrate.exit_code, 0) << calibrate.err;

  nlohmann::json digests = nlohmann::json::object();
  for (const GoldenCase& c : golden_cases()) {
    std::vector<std::string> options = c.options;
    if (!c.plan.is_null()) {
      const fs::path plan = dir_ / (c.name + ".plan.json");
      testing::write_file(plan, c.plan.dump());
      options.insert(options.end(), {"--plan", plan.string()});
    }
    const fs::path out = dir_ / c.name;
    RunResult r;
    if (c.stats_file) {
      std::vector<std::string> args = {"quantize", "--model", stories260k_dir().string(), "--out", out.string(),
                                       "--calib", stats.string(), "--threads", "1", "--progress", "off"};
      args.insert(args.end(), options.begin(), options.end());
      r = run_fsq(args);
    } else {
      r = quantize(out, options);
    }
    ASSERT_EQ(r.exit_code, 0) << c.name << ": " << r.err;
    digests[c.name] = checkpoint_digests(out);
    if (record) continue;
    ASSERT_TRUE(recorded.contains(c.name)) << c.name << " has no recorded digests in " << kDigestsFile;
    EXPECT_EQ(digests[c.name], recorded[c.name]) << c.name << ": the checkpoint's bytes changed";
    fs::remove_all(out);
  }
  if (record) {
    std::ofstream(kDigestsFile) << digests.dump(2) << "\n";
    std::printf("recorded %zu cases in %s\n", digests.size(), kDigestsFile.string().c_str());
  }
}

}  // namespace
}  // namespace fsq::clitest
