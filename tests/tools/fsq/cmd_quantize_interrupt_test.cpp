// fsq quantize interrupted with SIGINT and with SIGTERM once its first layer is saved: it
// exits 128 + signal with one line on stderr, leaves no staging file or folder (also not
// inside "<out>.partial"), keeps the saved layers, and the same command then resumes and
// writes the bytes of an uninterrupted run.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>

#include "cli_support.h"
#include "folder_digest.h"
#include "text_files.h"

namespace fsq::clitest {
namespace {
namespace fs = std::filesystem;

constexpr auto kLimit = std::chrono::minutes(5);

class CliQuantizeInterrupt : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(tinystories_val())) return;  // each test starts with FSQ_REQUIRE_STORIES260K
    dir_ = make_temp_dir_caller_removes("fsq-cli-quantize-interrupt");
    testing::write_file(dir_ / "calib.txt", testing::tail_of(tinystories_val(), 100'000));
    whole_ = run_fsq(args(dir_ / "whole"));
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  static std::vector<std::string> args(const fs::path& out) {
    return {"quantize", "--model", stories260k_dir().string(), "--method", "awq", "--bits", "4", "--group-size",
            "32", "--calib-data", (dir_ / "calib.txt").string(), "--samples", "8", "--seq-len", "64",
            "--threads", "1", "--progress", "off", "--out", out.string(), "--json", out.string() + ".json"};
  }

  // Starts quantize into `name`, sends `sig` once a layer is saved, checks how it ended
  // and what it left, then reruns the same command.
  static void interrupt_then_resume(int sig) {
    ASSERT_EQ(whole_.exit_code, 0) << whole_.err;
    const std::string name = sig == SIGINT ? "sigint" : "sigterm";
    const fs::path out = dir_ / name, partial = dir_ / (name + ".partial"), err = dir_ / (name + ".stderr");
    const pid_t pid = spawn_fsq(args(out), dir_ / (name + ".stdout"), err);
    ASSERT_GT(pid, 0);
    const KillIfRunning guard(pid);
    const auto start = std::chrono::steady_clock::now();
    while (saved_layer_files(partial) < 1 && std::chrono::steady_clock::now() - start < kLimit)
      ASSERT_FALSE(wait_for_exit(pid, std::chrono::milliseconds(5))) << "fsq quantize ended before a layer was saved";
    kill(pid, sig);
    const std::optional<int> status = wait_for_exit(pid, kLimit);
    ASSERT_TRUE(status) << "fsq quantize did not exit after the signal";
    ASSERT_TRUE(WIFEXITED(*status)) << "fsq was killed by signal " << WTERMSIG(*status) << " instead of handling it";
    EXPECT_EQ(WEXITSTATUS(*status), 128 + sig);
    EXPECT_EQ(testing::read_file(err), "fsq: interrupted; rerun the same command to resume\n");
    EXPECT_FALSE(fs::exists(out));
    EXPECT_EQ(staging_paths_below(dir_), "");
    const int saved = saved_layer_files(partial);
    EXPECT_GE(saved, 1);
    EXPECT_LT(saved, kStoriesLayers);

    RunResult r = run_fsq(args(out));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("resuming"), std::string::npos) << r.out;
    EXPECT_EQ(read_json(out.string() + ".json")["resumed_layers"].get<int>(), saved);
    EXPECT_FALSE(fs::exists(partial));
    EXPECT_EQ(testing::folder_digest(out), testing::folder_digest(dir_ / "whole"));
  }

  static fs::path dir_;
  static RunResult whole_;
};
fs::path CliQuantizeInterrupt::dir_;
RunResult CliQuantizeInterrupt::whole_;

TEST_F(CliQuantizeInterrupt, SigintExits130KeepsSavedLayersAndTheRerunResumes) {
  FSQ_REQUIRE_STORIES260K();
  interrupt_then_resume(SIGINT);
}

TEST_F(CliQuantizeInterrupt, SigtermExits143KeepsSavedLayersAndTheRerunResumes) {
  FSQ_REQUIRE_STORIES260K();
  interrupt_then_resume(SIGTERM);
}

}  // namespace
}  // namespace fsq::clitest
