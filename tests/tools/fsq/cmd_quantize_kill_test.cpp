// fsq quantize killed with SIGKILL part-way (at a layer drawn from a seeded generator: a new
// seed each run, printed and in every failure message; FSQ_TEST_SEED=N replays one), then
// the same command again: the output must not exist after the kill, the rerun must resume
// from the saved layers without redoing them, and its output must equal an uninterrupted
// run's byte for byte. The quantized model evaluated twice gives the same perplexity.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <random>
#include <stdexcept>
#include <thread>

#include "cli_support.h"
#include "folder_digest.h"
#include "text_files.h"

extern char** environ;

namespace fsq::clitest {
namespace {
namespace fs = std::filesystem;

constexpr auto kPoll = std::chrono::milliseconds(5);
constexpr auto kGiveUp = std::chrono::minutes(10);

std::vector<std::string> quantize_args(const fs::path& dir, const fs::path& out) {
  return {"quantize", "--model", stories260k_dir().string(), "--method", "awq", "--bits", "4", "--group-size", "32",
          "--calib-data", (dir / "calib.txt").string(), "--samples", "64", "--seq-len", "256", "--threads", "1",
          "--progress", "off", "--out", out.string(), "--json", (out.string() + ".json")};
}

// Starts fsq with `args` (output discarded) and SIGKILLs it once `partial` holds
// `kill_after` finished layers. Returns false when it exited on its own first.
bool run_and_kill(const std::vector<std::string>& args, const fs::path& partial, int kill_after) {
  std::vector<std::string> argv_s = {FSQ_BINARY};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, FSQ_BINARY, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return false;
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  while (std::chrono::steady_clock::now() - start < kGiveUp) {
    if (waitpid(pid, &status, WNOHANG) == pid) return false;  // finished before the kill
    if (saved_layer_files(partial) >= kill_after) break;
    std::this_thread::sleep_for(kPoll);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

using testing::folder_digest;

// FSQ_TEST_SEED when set (to replay a failed run), else a fresh seed from std::random_device.
uint32_t test_seed() {
  const char* s = std::getenv("FSQ_TEST_SEED");
  if (s == nullptr || *s == '\0') return std::random_device{}();
  char* end = nullptr;
  const unsigned long v = std::strtoul(s, &end, 10);
  if (*end != '\0') throw std::invalid_argument(std::string("FSQ_TEST_SEED=") + s + ": not a number");
  return static_cast<uint32_t>(v);
}

double perplexity(const fs::path& model, const fs::path& json) {
  RunResult r = run_fsq({"eval", "--model", model.string(), "--data", tinystories_val().string(), "--seq-len", "256",
                         "--max-windows", "8", "--threads", "1", "--no-speed", "--progress", "off", "--json",
                         json.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return read_json(json)["perplexity"]["ppl"].get<double>();
}

TEST(CliQuantizeKill, SigkillThenRerunResumesAndWritesTheSameBytes) {
  FSQ_REQUIRE_STORIES260K();
  const TempDir scratch("fsq-cli-quantize-kill");
  const fs::path& dir = scratch.path();
  testing::write_file(dir / "calib.txt", testing::tail_of(tinystories_val(), 200'000));
  const fs::path whole = dir / "whole", killed = dir / "killed";
  RunResult r = run_fsq(quantize_args(dir, whole));
  ASSERT_EQ(r.exit_code, 0) << r.err;

  const uint32_t seed = test_seed();
  std::cout << "kill point seed: FSQ_TEST_SEED=" << seed << std::endl;
  RecordProperty("seed", std::to_string(seed));
  SCOPED_TRACE("kill point seed " + std::to_string(seed) + "; FSQ_TEST_SEED=" + std::to_string(seed) +
               " replays this run");
  std::mt19937 rng(seed);
  const int kill_after = std::uniform_int_distribution<int>(1, kStoriesLayers - 1)(rng);
  std::cout << "killing after " << kill_after << " of " << kStoriesLayers << " layers" << std::endl;
  const fs::path partial = killed.string() + ".partial";
  ASSERT_TRUE(run_and_kill(quantize_args(dir, killed), partial, kill_after))
      << "fsq quantize finished before " << kill_after << " layers were saved";
  EXPECT_FALSE(fs::exists(killed)) << "a killed run left its output folder";
  const int saved = saved_layer_files(partial);
  EXPECT_GE(saved, kill_after);
  EXPECT_LT(saved, kStoriesLayers);

  r = run_fsq(quantize_args(dir, killed));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("resuming"), std::string::npos) << r.out;
  EXPECT_EQ(read_json(killed.string() + ".json")["resumed_layers"].get<int>(), saved);  // none redone
  EXPECT_FALSE(fs::exists(partial));
  EXPECT_EQ(folder_digest(killed), folder_digest(whole));

  const double first = perplexity(killed, dir / "eval1.json"), second = perplexity(killed, dir / "eval2.json");
  EXPECT_EQ(first, second);
  EXPECT_GT(first, 1.0);
}

}  // namespace
}  // namespace fsq::clitest
