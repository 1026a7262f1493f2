// OutputLock: one writer per output. A second holder is refused naming the first one's pid,
// a lock left by a killed process is taken over, and the lock file goes when released.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "common/error.h"
#include "common/output_lock.h"
#include "temp_dir.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::string refusal(const fs::path& out) {
  try {
    OutputLock second(out, "--out");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A child process that takes the lock of `out` and then waits (until killed); returns once
// the lock file names it.
pid_t child_holding(const fs::path& out) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    try {
      OutputLock lock(out, "--out");
      for (;;) ::pause();
    } catch (...) {
      ::_exit(3);
    }
  }
  const std::string want = std::to_string(pid) + "\n";
  for (int i = 0; i < 500; ++i) {
    std::ifstream in(OutputLock::lock_path(out));
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text == want) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pid;
}

TEST(OutputLock, LockPathSitsBesideTheOutput) {
  EXPECT_EQ(OutputLock::lock_path("dir/q4"), fs::path("dir/q4.fsq-lock"));
  EXPECT_EQ(OutputLock::lock_path("dir/q4/"), fs::path("dir/q4.fsq-lock"));
  EXPECT_EQ(OutputLock::lock_path("calib.safetensors"), fs::path("calib.safetensors.fsq-lock"));
}

TEST(OutputLock, SecondWriterIsRefusedNamingTheHolderAndTheFileGoesOnRelease) {
  TempDir dir("fsq-output-lock");
  const fs::path out = dir / "q4";
  {
    OutputLock first(out, "--out");
    ASSERT_TRUE(first.held());
    EXPECT_TRUE(fs::exists(OutputLock::lock_path(out)));
    const std::string m = refusal(out);  // a second open file description, as another process would have
    EXPECT_NE(m.find("--out " + out.string()), std::string::npos) << m;
    EXPECT_NE(m.find("(pid " + std::to_string(::getpid()) + ")"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  EXPECT_FALSE(fs::exists(OutputLock::lock_path(out)));
  EXPECT_EQ(refusal(out), "");  // free again
}

TEST(OutputLock, AnotherProcessHoldsItUntilKilledThenItIsTakenOver) {
  TempDir dir("fsq-output-lock");
  const fs::path out = dir / "calib.safetensors";
  const pid_t child = child_holding(out);
  ASSERT_GT(child, 0);
  const std::string m = refusal(out);
  EXPECT_NE(m.find("another fsq process (pid " + std::to_string(child) + ")"), std::string::npos) << m;
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  // The killed holder left its lock file (no cleanup on SIGKILL); it is stale and taken over.
  ASSERT_TRUE(fs::exists(OutputLock::lock_path(out)));
  {
    OutputLock taken(out, "--out");
    EXPECT_TRUE(taken.held());
    std::ifstream in(OutputLock::lock_path(out));
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text, std::to_string(::getpid()) + "\n");
  }
  EXPECT_FALSE(fs::exists(OutputLock::lock_path(out)));
}

TEST(OutputLock, LockOutputChecksThePathAndSkipsStdout) {
  TempDir dir("fsq-output-lock");
  EXPECT_FALSE(lock_output({"-", "--out", OutputKind::File, false}, {}).held());
  EXPECT_FALSE(lock_output({"", "--json", OutputKind::File, false}, {}).held());
  std::ofstream(dir / "exists.json") << "x";
  EXPECT_THROW(lock_output({dir / "exists.json", "--out", OutputKind::File, false}, {}), Error);
  EXPECT_FALSE(fs::exists(OutputLock::lock_path(dir / "exists.json")));  // refused before locking
  EXPECT_THROW(lock_output({dir / "missing" / "out", "--out", OutputKind::Folder, false}, {}), Error);
  OutputLock held = lock_output({dir / "new", "--out", OutputKind::Folder, false}, {});
  EXPECT_TRUE(held.held());
  OutputLock moved = std::move(held);
  EXPECT_FALSE(held.held());  // NOLINT(bugprone-use-after-move): moved-from holds nothing
  EXPECT_TRUE(moved.held());
  EXPECT_THROW(lock_output({dir / "new", "--out", OutputKind::Folder, false}, {}), Error);
}

TEST(OutputLock, ASymlinkAtTheLockPathIsNotFollowed) {
  TempDir dir("fsq-output-lock");
  std::ofstream(dir / "victim") << "keep";
  fs::create_symlink(dir / "victim", OutputLock::lock_path(dir / "out"));
  EXPECT_THROW(OutputLock(dir / "out", "--out"), Error);
  std::ifstream in(dir / "victim");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "keep");
}

}  // namespace
}  // namespace fsq
