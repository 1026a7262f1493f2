// fsq export --format gguf on the real SmolLM2-135M, judged by llama.cpp itself: its
// llama-perplexity loads fsq's GGUF and agrees with fsq eval of the same file under the same
// (llama.cpp) protocol. llama.cpp's binaries come from FSQ_LLAMA_CPP_BIN (scripts/test.sh
// sets it from scripts/llama-cpp.sh under CI; elsewhere those tests skip with a message).
// Bad requests are refused with one line and no file.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>

#include "cli_support.h"

namespace fsq::clitest {
namespace {

namespace fs = std::filesystem;

// fsq eval of two files that decode to the same f32 weights: the same arithmetic on the same
// numbers, so the same perplexity up to summation noise.
constexpr double kSameWeights = 1e-9;
// llama-perplexity vs fsq eval on the same f32 weights: both in f32, differing only in the
// order of accumulation inside dot products of 576..1536 terms (relative error ~1e-6 per
// logit); measured 4e-5 on the source model.
constexpr double kSameArithmetic = 1e-3;

double final_ppl(const std::string& log) {
  std::smatch m;
  if (!std::regex_search(log, m, std::regex("Final estimate: PPL = ([0-9.]+)"))) return -1;
  return std::stod(m[1]);
}

// llama.cpp decodes fsq's blocks to the weights fsq decodes: llama-quantize turns fsq's
// Q4_K_M file (Q4_K, Q6_K, Q5_0 and Q8_0 blocks on SmolLM2) back into F32 with llama.cpp's
// dequantizers, and fsq eval gives that F32 file the perplexity it gives fsq's file;
// llama-perplexity on the F32 file agrees with fsq eval too.
TEST(CliExportGguf, LlamaCppDecodesFsqsBlocksToFsqsWeights) {
  FSQ_REQUIRE_SMOLLM2();
  FSQ_REQUIRE_LLAMA_CPP();
  const TempDir scratch("fsq-cli-export-gguf");
  const fs::path& dir = scratch.path();
  const fs::path out = dir / "smollm2-q4_k_m.gguf", f32 = dir / "llama-decoded-f32.gguf";
  RunResult exp = run_fsq({"export", "--format", "gguf", "--type", "Q4_K", "--threads", "1", "--progress", "off",
                           testing::smollm2_gguf().string(), out.string()});
  ASSERT_EQ(exp.exit_code, 0) << exp.err;
  const std::string bin = std::getenv("FSQ_LLAMA_CPP_BIN");
  auto [qrc, qlog] = shell("'" + bin + "/llama-quantize' --allow-requantize '" + out.string() + "' '" + f32.string() +
                           "' F32 1");
  ASSERT_EQ(qrc, 0) << qlog;

  auto fsq_ppl = [&](const fs::path& model, const std::string& json) {
    RunResult eval = run_fsq({"eval", "--model", model.string(), "--data", wikitext_test().string(), "--protocol",
                              "llama.cpp", "--seq-len", "512", "--max-windows", "2", "--no-speed", "--threads", "1",
                              "--progress", "off", "--json", (dir / json).string()});
    EXPECT_EQ(eval.exit_code, 0) << eval.err;
    return read_json(dir / json)["perplexity"]["ppl"].get<double>();
  };
  const double ours = fsq_ppl(out, "ours.json"), decoded = fsq_ppl(f32, "decoded.json");
  auto [prc, plog] = shell("'" + bin + "/llama-perplexity' -m '" + f32.string() + "' -f '" +
                           wikitext_test().string() + "' -c 512 --chunks 2 -t 1");
  ASSERT_EQ(prc, 0) << plog;
  auto [qprc, qplog] = shell("'" + bin + "/llama-perplexity' -m '" + out.string() + "' -f '" +
                             wikitext_test().string() + "' -c 512 --chunks 2 -t 1");
  ASSERT_EQ(qprc, 0) << qplog;
  const double llama_f32 = final_ppl(plog), llama_quantized = final_ppl(qplog);
  std::printf("fsq eval: fsq's file %.6f, llama.cpp's F32 decode of it %.6f; llama-perplexity: F32 decode %.4f, "
              "fsq's file %.4f (its kernels quantize activations) (2 chunks of 512)\n",
              ours, decoded, llama_f32, llama_quantized);
  EXPECT_NEAR(decoded / ours, 1.0, kSameWeights);
  EXPECT_NEAR(llama_f32 / ours, 1.0, kSameArithmetic);
  EXPECT_GT(llama_quantized, 0);
}

TEST(CliExportGguf, RefusesBadRequestsBeforeWriting) {
  FSQ_REQUIRE_SMOLLM2();
  const TempDir scratch("fsq-cli-export-gguf-bad");
  const fs::path& dir = scratch.path();
  const fs::path out = dir / "out.gguf";
  auto refused = [&](const std::vector<std::string>& extra, const std::string& says) {
    std::vector<std::string> args = {"export", "--format", "gguf", "--progress", "off"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back(testing::smollm2_gguf().string());
    args.push_back(out.string());
    RunResult r = run_fsq(args);
    EXPECT_NE(r.exit_code, 0) << says;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
    EXPECT_EQ(staging_paths_below(dir), "");
  };
  refused({"--type", "Q4_K_L"}, "is not one fsq writes");
  refused({}, "needs --type");
  refused({"--type", "Q4_0", "--awq"}, "give --calib");

  // A plan made for other weights (its model_sha256), and one of another layer count.
  nlohmann::json plan = {{"model_sha256", std::string(64, '0')},
                         {"plan", {{"bits_per_layer", std::vector<int>(30, 4)}}}};
  std::ofstream(dir / "other.json") << plan.dump();
  refused({"--plan", (dir / "other.json").string()}, "was made for another model");
  plan.erase("model_sha256");
  plan["plan"]["bits_per_layer"] = std::vector<int>(12, 4);
  std::ofstream(dir / "short.json") << plan.dump();
  refused({"--plan", (dir / "short.json").string()}, "the plan has 12 layers");
  plan["plan"]["bits_per_layer"] = std::vector<int>(30, 7);
  std::ofstream(dir / "seven.json") << plan.dump();
  refused({"--plan", (dir / "seven.json").string()}, "GGUF layers take");
  refused({"--type", "Q4_0", "--emit-launch", (dir / "run.sh").string()}, "needs --plan");
}

// The Hugging Face folder as GGUF: llama.cpp loads fsq's file of the same weights, and its
// perplexity is fsq eval's of that file (F32: the same numbers; F16: both read the same
// f16 weights).
double llama_cpp_ppl(const fs::path& model, int ctx) {
  const std::string bin = std::getenv("FSQ_LLAMA_CPP_BIN");
  // Under a loaded ctest -j2, llama-perplexity has exited 0 with its log cut after the first
  // chunk (its asynchronous logger not flushed): one retry, then the log is the failure.
  std::pair<int, std::string> run;
  for (int attempt = 0; attempt < 2; ++attempt) {
    run = shell("'" + bin + "/llama-perplexity' -m '" + model.string() + "' -f '" + wikitext_test().string() +
                "' -c " + std::to_string(ctx) + " --chunks 2 -t 1");
    if (run.first == 0 && final_ppl(run.second) > 0) break;
  }
  EXPECT_EQ(run.first, 0) << run.second;
  EXPECT_GT(final_ppl(run.second), 0) << run.second;
  return final_ppl(run.second);
}

// A packed checkpoint is scored with exact (f32) activations: the weights alone are compared.
double fsq_ppl(const fs::path& model, int ctx, const fs::path& json) {
  RunResult eval = run_fsq({"eval", "--model", model.string(), "--data", wikitext_test().string(), "--protocol",
                            "llama.cpp", "--seq-len", std::to_string(ctx), "--max-windows", "2", "--no-speed",
                            "--prefill-activations", "f32", "--threads", "1", "--progress", "off", "--json",
                            json.string()});
  EXPECT_EQ(eval.exit_code, 0) << eval.err;
  return read_json(json)["perplexity"]["ppl"].get<double>();
}

void expect_llama_cpp_agrees_on_folder(const fs::path& folder, const std::string& type, int ctx) {
  const TempDir scratch("fsq-cli-export-gguf-hf");
  const fs::path& dir = scratch.path();
  const fs::path out = dir / ("model-" + type + ".gguf");
  RunResult exp = run_fsq({"export", "--format", "gguf", "--type", type, "--threads", "2", "--progress", "off",
                           folder.string(), out.string()});
  ASSERT_EQ(exp.exit_code, 0) << exp.err;
  const double llama = llama_cpp_ppl(out, ctx), ours = fsq_ppl(out, ctx, dir / "eval.json");
  std::printf("%s as %s: llama-perplexity %.4f, fsq eval %.4f (2 chunks of %d)\n", folder.string().c_str(),
              type.c_str(), llama, ours, ctx);
  EXPECT_NEAR(llama / ours, 1.0, kSameArithmetic);
}

TEST(CliExportGguf, LlamaCppRunsStories260kFolderExport) {
  FSQ_REQUIRE_SHARED("models/stories260K/model.safetensors");
  FSQ_REQUIRE_LLAMA_CPP();
  expect_llama_cpp_agrees_on_folder(testing::stories260k_dir(), "F32", 256);
}

TEST(CliExportGguf, LlamaCppRunsSmollm2FolderExport) {
  FSQ_REQUIRE_SMOLLM2_HF();
  FSQ_REQUIRE_LLAMA_CPP();
  expect_llama_cpp_agrees_on_folder(testing::smollm2_hf(), "F16", 512);
}

// A packed checkpoint on llama.cpp's grids: llama-quantize decodes the carried blocks with
// llama.cpp's own dequantizers into an F32 file that fsq eval scores exactly as it scores
// the GGUF (the same weights), and llama-perplexity on that F32 file agrees with fsq eval of
// the packed checkpoint itself (fsq's dequantization: Q4_0 exactly; Q4_1 up to m's fp16
// rounding, which the export notes).
void expect_llama_cpp_decodes_packed(const std::vector<std::string>& grid, const std::string& label) {
  const TempDir scratch("fsq-cli-export-gguf-packed");
  const fs::path& dir = scratch.path();
  const fs::path packed = dir / "packed", out = dir / "packed.gguf", f32 = dir / "llama-decoded-f32.gguf";
  std::vector<std::string> quantize = {"quantize", "--method", "rtn", "--group-size", "32", "--head-bits", "16",
                                       "--model", testing::smollm2_hf().string(), "--out", packed.string(),
                                       "--threads", "2", "--progress", "off"};
  quantize.insert(quantize.end(), grid.begin(), grid.end());
  RunResult q = run_fsq(quantize);
  ASSERT_EQ(q.exit_code, 0) << q.err;
  RunResult exp = run_fsq({"export", "--format", "gguf", "--type", "F32", "--progress", "off", packed.string(),
                           out.string()});
  ASSERT_EQ(exp.exit_code, 0) << exp.err;
  EXPECT_NE(exp.out.find("210 of 211 matrices carried over bit for bit"), std::string::npos) << exp.out;
  const std::string bin = std::getenv("FSQ_LLAMA_CPP_BIN");
  auto [qrc, qlog] = shell("'" + bin + "/llama-quantize' --allow-requantize '" + out.string() + "' '" + f32.string() +
                           "' F32 1");
  ASSERT_EQ(qrc, 0) << qlog;
  const double gguf = fsq_ppl(out, 512, dir / "gguf.json"), decoded = fsq_ppl(f32, 512, dir / "decoded.json");
  const double own = fsq_ppl(packed, 512, dir / "packed.json"), llama = llama_cpp_ppl(f32, 512);
  std::printf("%s: fsq eval of the packed checkpoint %.6f, of its GGUF %.6f, of llama.cpp's F32 decode %.6f; "
              "llama-perplexity of the decode %.4f (2 chunks of 512)\n",
              label.c_str(), own, gguf, decoded, llama);
  EXPECT_NEAR(decoded / gguf, 1.0, kSameWeights);
  EXPECT_NEAR(llama / own, 1.0, kSameArithmetic);
}

TEST(CliExportGguf, LlamaCppDecodesPackedQ4_0ToFsqsWeights) {
  FSQ_REQUIRE_SMOLLM2_HF();
  FSQ_REQUIRE_LLAMA_CPP();
  expect_llama_cpp_decodes_packed({"--bits", "4", "--sym"}, "w4g32s as Q4_0");
}

TEST(CliExportGguf, LlamaCppDecodesPackedQ4_1ToFsqsWeights) {
  FSQ_REQUIRE_SMOLLM2_HF();
  FSQ_REQUIRE_LLAMA_CPP();
  expect_llama_cpp_decodes_packed({"--bits", "4"}, "w4g32a as Q4_1");
}

TEST(CliExportGguf, RefusesAPackedGridLlamaCppHasNot) {
  FSQ_REQUIRE_SHARED("models/stories260K/model.safetensors");
  const TempDir scratch("fsq-cli-export-gguf-grid");
  const fs::path& dir = scratch.path();
  RunResult q = run_fsq({"quantize", "--method", "rtn", "--bits", "4", "--group-size", "64", "--model",
                         testing::stories260k_dir().string(), "--out", (dir / "packed").string(), "--progress", "off"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  RunResult r = run_fsq({"export", "--format", "gguf", "--type", "Q4_0", "--progress", "off",
                         (dir / "packed").string(), (dir / "out.gguf").string()});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("GGUF export carries w4g32s (Q4_0), w4g32a (Q4_1) and w8g32s (Q8_0) linears"),
            std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out.gguf"));
}

TEST(CliExportGguf, RefusesAFolderItCannotRead) {
  const TempDir scratch("fsq-cli-export-gguf-folder");
  const fs::path& dir = scratch.path();
  fs::create_directories(dir / "empty");
  RunResult r = run_fsq({"export", "--format", "gguf", "--type", "F16", "--progress", "off", (dir / "empty").string(),
                         (dir / "out.gguf").string()});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("a Hugging Face folder (config.json and safetensors)"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out.gguf"));
}

}  // namespace
}  // namespace fsq::clitest
