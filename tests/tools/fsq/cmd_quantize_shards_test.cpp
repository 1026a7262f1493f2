// fsq quantize --max-shard-size on stories260K: a checkpoint split into shards with the
// Hugging Face index evaluates exactly as the single file, inspect reads it, and a disk that
// fills while the shards are written leaves nothing published, says so in one line and keeps
// the saved layers, from which the rerun writes the same bytes as an uninterrupted run.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <csignal>

#include "cli_support.h"
#include "folder_digest.h"

namespace fsq::clitest {
namespace {
namespace fs = std::filesystem;

// The packed stories260K at w4g32 is about 170 KB: 30 KB shards make six.
const std::string kSmallShards = "30KB";
// Each saved layer (one byte per code) is about 55 KB, model.safetensors about 180 KB: a
// file limit between the two lets every layer be saved and fails the checkpoint's write.
constexpr rlim_t kFileLimitBytes = 100 * 1024;

std::vector<std::string> quantize_args(const fs::path& out) {
  return {"quantize", "--model", stories260k_dir().string(), "--method", "rtn", "--bits", "4", "--group-size",
          "32", "--out", out.string(), "--threads", "1", "--progress", "off", "--json", out.string() + ".json"};
}

std::vector<fs::path> shard_files(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".safetensors") files.push_back(e.path().filename());
  std::sort(files.begin(), files.end());
  return files;
}

// `fsq quantize` with every file it writes limited to `bytes` (RLIMIT_FSIZE: write() past it
// fails with EFBIG, as on a full disk; SIGXFSZ, which it also raises, is ignored). The limit
// and the ignored signal are set here around the spawn, which the child inherits.
RunResult run_with_file_limit(const std::vector<std::string>& args, rlim_t bytes, const fs::path& dir) {
  rlimit saved{};
  getrlimit(RLIMIT_FSIZE, &saved);
  const rlimit limited{bytes, saved.rlim_max};
  auto* old_handler = std::signal(SIGXFSZ, SIG_IGN);
  setrlimit(RLIMIT_FSIZE, &limited);
  const pid_t pid = spawn_fsq(args, dir / "limited.out", dir / "limited.err");
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);
  RunResult r;
  if (pid < 0) return r;
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  r.out = testing::read_file(dir / "limited.out");
  r.err = testing::read_file(dir / "limited.err");
  return r;
}

TEST(CliQuantizeShards, ShardedOutputEvaluatesExactlyAsTheSingleFile) {
  FSQ_REQUIRE_STORIES260K();
  const TempDir scratch("fsq-cli-quantize-shards");
  const fs::path& dir = scratch.path();
  const fs::path single = dir / "single", sharded = dir / "sharded";
  RunResult r = run_fsq(quantize_args(single));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> args = quantize_args(sharded);
  args.insert(args.end(), {"--max-shard-size", kSmallShards});
  r = run_fsq(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;

  EXPECT_EQ(shard_files(single), std::vector<fs::path>{"model.safetensors"});
  EXPECT_FALSE(fs::exists(single / "model.safetensors.index.json"));
  const std::vector<fs::path> shards = shard_files(sharded);
  ASSERT_GE(shards.size(), 2u);
  EXPECT_EQ(shards.front(), "model-00001-of-0000" + std::to_string(shards.size()) + ".safetensors");
  const nlohmann::json index = read_json(sharded / "model.safetensors.index.json");
  EXPECT_TRUE(index["metadata"].contains("total_size"));
  EXPECT_EQ(read_json(sharded / "fsq.json")["tensor_sha256"], read_json(single / "fsq.json")["tensor_sha256"]);

  // The same logits: zero KL against the single file and the same perplexity.
  const fs::path json = dir / "compare.json";
  r = run_fsq({"eval", "--model", sharded.string(), "--compare", single.string(), "--data",
               tinystories_val().string(), "--seq-len", "256", "--max-windows", "4", "--threads", "1", "--no-speed",
               "--progress", "off", "--json", json.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json eval = read_json(json);
  EXPECT_EQ(eval["compare"]["max_kl"].get<double>(), 0.0);
  EXPECT_EQ(eval["compare"]["top1_agreement"].get<double>(), 1.0);
  EXPECT_EQ(eval["perplexity"]["ppl"].get<double>(), eval["compare"]["ref_ppl"].get<double>());

  r = run_fsq({"inspect", sharded.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(CliQuantizeShards, BadShardSizeIsRefusedBeforeAnyWork) {
  FSQ_REQUIRE_STORIES260K();
  const TempDir scratch("fsq-cli-quantize-shard-size");
  const fs::path& dir = scratch.path();
  std::vector<std::string> args = quantize_args(dir / "out");
  args.insert(args.end(), {"--max-shard-size", "5XB"});
  const RunResult r = run_fsq(args);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("--max-shard-size: expects a size such as 5GB"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out.partial"));
}

TEST(CliQuantizeShards, FullDiskPublishesNothingAndTheRerunResumes) {
  FSQ_REQUIRE_STORIES260K();
  const TempDir scratch("fsq-cli-quantize-disk-full");
  const fs::path& dir = scratch.path();
  const fs::path whole = dir / "whole", full = dir / "full";
  RunResult r = run_fsq(quantize_args(whole));
  ASSERT_EQ(r.exit_code, 0) << r.err;

  r = run_with_file_limit(quantize_args(full), kFileLimitBytes, dir);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("model.safetensors: write failed: File too large"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(full));
  EXPECT_EQ(saved_layer_files(full.string() + ".partial"), kStoriesLayers);  // kept for the rerun
  EXPECT_EQ(staging_paths_below(dir), "");

  r = run_fsq(quantize_args(full));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("resuming"), std::string::npos) << r.out;
  EXPECT_EQ(read_json(full.string() + ".json")["resumed_layers"].get<int>(), kStoriesLayers);
  EXPECT_EQ(testing::folder_digest(full), testing::folder_digest(whole));
}

}  // namespace
}  // namespace fsq::clitest
