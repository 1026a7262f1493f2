// Issue 58 item 6: fsq profile's scratch folder (its temporary packed checkpoints) is removed
// however the run ends. SIGTERM: by the run itself. SIGKILL: by the next fsq run, whatever
// command it is (common/stale_temporaries.h), and never while its owner lives. The test stops
// the profile (SIGSTOP) as soon as its scratch folder appears, so that it cannot finish
// before the signal; without the fix the folder stayed until someone removed it by hand.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "cli_support.h"
#include "text_files.h"

namespace fsq::clitest {
namespace {
namespace fs = std::filesystem;

class CliStaleTemporaries : public ::testing::Test {
 protected:
  void SetUp() override {
    FSQ_REQUIRE_STORIES260K();
    dir_ = make_temp_dir_caller_removes("fsq-cli-stale-temporaries");
  }
  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Starts fsq profile with its scratch folder in dir_ and stops it once the folder exists.
  // Returns the folder; empty when the run ended first.
  fs::path start_profile_and_stop_it_mid_run() {
    pid_ = spawn_fsq({"profile", "--model", stories260k_dir().string(), "--widths", "4,16", "--prefill-batches", "1,2",
                      "--prefill-lengths", "8,16,32", "--decode-batches", "1,2", "--decode-contexts", "8,32",
                      "--decode-steps", "2", "--min-seconds", "0", "--threads", "1", "--work-dir", dir_.string(),
                      "--out", (dir_ / "cpu.json").string()},
                     dir_ / "stdout", dir_ / "stderr");
    if (pid_ <= 0) return {};
    const fs::path scratch = dir_ / ("fsq-profile.tmp-" + std::to_string(pid_));
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < std::chrono::minutes(2)) {
      if (fs::exists(scratch)) {
        ::kill(pid_, SIGSTOP);
        return scratch;
      }
      if (wait_for_exit(pid_, std::chrono::milliseconds(1))) {
        pid_ = 0;
        return {};
      }
    }
    return {};
  }

  // Any fsq command: each sweeps what dead runs left before it starts.
  void run_another_fsq() {
    const RunResult r = run_fsq({"inspect", stories260k_dir().string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  fs::path dir_;
  pid_t pid_ = 0;
};

TEST_F(CliStaleTemporaries, AKilledProfilesScratchFolderIsSweptByTheNextRunNotBefore) {
  const fs::path scratch = start_profile_and_stop_it_mid_run();
  ASSERT_FALSE(scratch.empty()) << "fsq profile ended before its scratch folder was seen: "
                                << testing::read_file(dir_ / "stderr");
  run_another_fsq();
  EXPECT_TRUE(fs::is_directory(scratch)) << "a live run's scratch folder was swept";
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = 0;
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  ASSERT_TRUE(fs::is_directory(scratch)) << "SIGKILL runs no cleanup: the folder must still be there";
  run_another_fsq();
  EXPECT_FALSE(fs::exists(scratch)) << "the next run left the killed run's scratch folder";
  EXPECT_EQ(staging_paths_below(dir_), "");
  EXPECT_FALSE(fs::exists(dir_ / "cpu.json"));
}

TEST_F(CliStaleTemporaries, AnInterruptedProfileRemovesItsScratchFolder) {
  const fs::path scratch = start_profile_and_stop_it_mid_run();
  ASSERT_FALSE(scratch.empty()) << "fsq profile ended before its scratch folder was seen: "
                                << testing::read_file(dir_ / "stderr");
  ::kill(pid_, SIGTERM);
  ::kill(pid_, SIGCONT);
  const std::optional<int> status = wait_for_exit(pid_, std::chrono::minutes(1));
  ASSERT_TRUE(status) << "fsq profile did not exit after SIGTERM";
  pid_ = 0;
  ASSERT_TRUE(WIFEXITED(*status)) << "killed by signal " << WTERMSIG(*status) << " instead of handling it";
  EXPECT_EQ(WEXITSTATUS(*status), 143);
  EXPECT_FALSE(fs::exists(scratch)) << "SIGTERM left the scratch folder";
  EXPECT_EQ(staging_paths_below(dir_), "");
  const std::string err = testing::read_file(dir_ / "stderr");
  EXPECT_NE(err.find("fsq: interrupted; nothing was written\n"), std::string::npos) << err;
}

}  // namespace
}  // namespace fsq::clitest
