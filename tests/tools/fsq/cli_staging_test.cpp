// Staging paths seen from the command line: a run sweeps the staging folder and files that
// dead processes left for its outputs (a kill during the final write leaves them) and keeps
// a live process's; a command without resume, interrupted, says that nothing was written.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_support.h"
#include "text_files.h"

namespace fsq::clitest {
namespace {
namespace fs = std::filesystem;

// The pid of a child that already exited and was reaped: no process has it (until reused).
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

TEST(CliStaging, ARunSweepsDeadProcessesStagingOfItsOutputsAndKeepsALiveOnes) {
  FSQ_REQUIRE_STORIES260K();
  testing::TempDir dir("fsq-cli-staging");
  const std::string dead = std::to_string(dead_pid()), live = std::to_string(::getpid());
  ASSERT_NE(kill(std::stoi(dead), 0), 0);
  const fs::path out = dir / "q", json = dir / "q.json";
  // What a kill during the final writes leaves: the output's staging folder (with files)
  // and the report's staging file.
  fs::create_directories(dir / ("q.tmp-" + dead));
  testing::write_file(dir / ("q.tmp-" + dead) / "model.safetensors", "half written");
  testing::write_file(dir / ("q.json.tmp." + dead + ".0"), "{");
  // A live process's (this test's), and names that only look alike: kept.
  fs::create_directories(dir / ("q.tmp-" + live));
  testing::write_file(dir / ("q.json.tmp." + live + ".0"), "{");
  testing::write_file(dir / ("q.tmp-" + dead + ".keep"), "x");
  fs::create_directories(dir / ("other.tmp-" + dead));

  RunResult r = run_fsq({"quantize", "--model", stories260k_dir().string(), "--method", "rtn", "--bits", "4",
                         "--group-size", "32", "--threads", "1", "--progress", "off", "--out", out.string(), "--json",
                         json.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(out / "fsq.json"));
  EXPECT_TRUE(fs::exists(json));
  EXPECT_FALSE(fs::exists(dir / ("q.tmp-" + dead)));
  EXPECT_FALSE(fs::exists(dir / ("q.json.tmp." + dead + ".0")));
  EXPECT_TRUE(fs::exists(dir / ("q.tmp-" + live)));
  EXPECT_TRUE(fs::exists(dir / ("q.json.tmp." + live + ".0")));
  EXPECT_TRUE(fs::exists(dir / ("q.tmp-" + dead + ".keep")));
  EXPECT_TRUE(fs::exists(dir / ("other.tmp-" + dead)));
}

TEST(CliStaging, EvalInterruptedExits143AndSaysNothingWasWritten) {
  FSQ_REQUIRE_STORIES260K();
  testing::TempDir dir("fsq-cli-staging");
  const fs::path json = dir / "eval.json";
  const pid_t pid = spawn_fsq({"eval", "--model", stories260k_dir().string(), "--data", tinystories_val().string(),
                               "--threads", "1", "--progress", "off", "--json", json.string()},
                              dir / "stdout", dir / "stderr");
  ASSERT_GT(pid, 0);
  const KillIfRunning guard(pid);
  // Signal as soon as fsq handles signals: the whole-file eval with speed takes far longer.
  const auto start = std::chrono::steady_clock::now();
  while (!catches_interrupts(pid) && std::chrono::steady_clock::now() - start < std::chrono::seconds(60))
    ASSERT_FALSE(wait_for_exit(pid, std::chrono::milliseconds(1))) << testing::read_file(dir / "stderr");
  kill(pid, SIGTERM);
  const std::optional<int> status = wait_for_exit(pid, std::chrono::minutes(2));
  ASSERT_TRUE(status) << "fsq eval did not exit after SIGTERM";
  ASSERT_TRUE(WIFEXITED(*status)) << "fsq was killed by signal " << WTERMSIG(*status) << " instead of handling it";
  EXPECT_EQ(WEXITSTATUS(*status), 143);
  EXPECT_EQ(testing::read_file(dir / "stderr"), "fsq: interrupted; nothing was written\n");
  EXPECT_FALSE(fs::exists(json));
  EXPECT_EQ(staging_paths_below(dir.path()), "");
}

}  // namespace
}  // namespace fsq::clitest
