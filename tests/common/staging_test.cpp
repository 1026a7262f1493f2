// Staging names, the sweep of staging paths that dead processes left, the sweep done by
// AtomicFile / AtomicDir, and the exit-time cleanup of this process's own staging paths.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "common/atomic_file.h"
#include "common/staging.h"
#include "temp_dir.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// The pid of a child that already exited and was reaped: no process has it (until reused).
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

void touch(const fs::path& p) { std::ofstream(p) << "x"; }

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

TEST(Staging, NamesParseBackAndNothingElseMatches) {
  EXPECT_EQ(staging_name("out", StagingKind::Folder, 123), "out.tmp-123");
  EXPECT_EQ(staging_name("a.json", StagingKind::File, 123, 4), "a.json.tmp.123.4");
  EXPECT_EQ(staging_pid("out.tmp-123", "out", StagingKind::Folder), 123);
  EXPECT_EQ(staging_pid("a.json.tmp.123.4", "a.json", StagingKind::File), 123);
  for (const char* name : {"out.tmp-", "out.tmp-0", "out.tmp-0123", "out.tmp-12x", "out.tmp-+12", "out.tmp--12",
                           "outx.tmp-12", "xout.tmp-12", "out.tmp-12.bak", "out.tmp-99999999999", "out.tmp.12.0"})
    EXPECT_EQ(staging_pid(name, "out", StagingKind::Folder), std::nullopt) << name;
  for (const char* name : {"a.tmp.12", "a.tmp.12.", "a.tmp.12.3.4", "a.tmp.12.03", "a.tmp.0.1", "a.tmp-12",
                           "a.tmp.x.1", "b.tmp.12.0", "a.tmp.12.0~"})
    EXPECT_EQ(staging_pid(name, "a", StagingKind::File), std::nullopt) << name;
}

TEST(Staging, SweepRemovesOnlyDeadProcessesStagingOfThatDestination) {
  TempDir tmp("fsq-staging");
  const pid_t dead = dead_pid(), live = ::getppid(), self = ::getpid();
  ASSERT_FALSE(process_exists(dead));
  ASSERT_TRUE(process_exists(live));
  const fs::path out = tmp / "out";
  auto folder = [&](pid_t pid) { return staging_name("out", StagingKind::Folder, pid); };
  auto file = [&](pid_t pid, unsigned n) { return staging_name("out", StagingKind::File, pid, n); };
  fs::create_directory(tmp / folder(dead));
  touch(tmp / folder(dead) / "model.safetensors");
  fs::create_directory(tmp / folder(live));
  fs::create_directory(tmp / folder(self));
  touch(tmp / file(dead, 0));
  touch(tmp / file(dead, 7));
  touch(tmp / file(live, 0));
  touch(tmp / file(self, 0));
  // Not ours to remove: another destination, a near miss, a folder where a file is expected
  // and a link to a folder (whose target must survive).
  fs::create_directory(tmp / staging_name("other", StagingKind::Folder, dead));
  touch(tmp / (folder(dead) + ".bak"));
  fs::create_directory(tmp / file(dead, 1));
  fs::create_directory(tmp / "target");
  touch(tmp / "target" / "keep");
  fs::create_directory_symlink(tmp / "target", tmp / staging_name("link", StagingKind::Folder, dead));

  std::set<std::string> expected = names_in(tmp.path());
  EXPECT_EQ(sweep_stale_staging(out, StagingKind::Folder), 1);
  expected.erase(folder(dead));
  EXPECT_EQ(names_in(tmp.path()), expected);
  EXPECT_EQ(sweep_stale_staging(out, StagingKind::File), 2);
  expected.erase(file(dead, 0));
  expected.erase(file(dead, 7));
  EXPECT_EQ(names_in(tmp.path()), expected);
  EXPECT_EQ(sweep_stale_staging(tmp / "link", StagingKind::Folder), 0);  // a link is not a staging folder
  EXPECT_TRUE(fs::exists(tmp / "target" / "keep"));
}

TEST(Staging, AtomicFileAndAtomicDirSweepTheirDestination) {
  TempDir tmp("fsq-staging");
  const pid_t dead = dead_pid(), live = ::getppid();
  const std::string stale_file = staging_name("a.json", StagingKind::File, dead, 0);
  const std::string live_file = staging_name("a.json", StagingKind::File, live, 0);
  const std::string stale_dir = staging_name("out", StagingKind::Folder, dead);
  touch(tmp / stale_file);
  touch(tmp / live_file);
  fs::create_directory(tmp / stale_dir);
  write_file_atomic(tmp / "a.json", "{}");
  EXPECT_FALSE(fs::exists(tmp / stale_file));
  EXPECT_TRUE(fs::exists(tmp / live_file));
  {
    AtomicDir dir(tmp / "out");
    EXPECT_FALSE(fs::exists(tmp / stale_dir));
    write_file_atomic(dir.staging() / "x", "x");
    dir.commit();
  }
  EXPECT_EQ(names_in(tmp.path()), (std::set<std::string>{"a.json", live_file, "out"}));
}

// In a child process (the cleanup locks the registry for good): staging in flight is
// removed, finished outputs and other folders (a quantize run's ".partial") stay.
TEST(Staging, ExitCleanupRemovesThisProcessesStagingOnly) {
  TempDir tmp("fsq-staging");
  fs::create_directory(tmp / "out.partial");
  touch(tmp / "out.partial" / "layer_00000.safetensors");
  const pid_t child = ::fork();
  if (child == 0) {
    write_file_atomic(tmp / "done.json", "{}");
    AtomicDir dir(tmp / "out");
    AtomicFile inside(dir.staging() / "model.safetensors");
    inside.write(std::string_view("partial bytes"));
    AtomicFile beside(tmp / "report.json");
    AtomicFile layer(tmp / "out.partial" / "layer_00001.safetensors");
    remove_all_staging_for_exit();
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(names_in(tmp.path()), (std::set<std::string>{"done.json", "out.partial"}));
  EXPECT_EQ(names_in(tmp / "out.partial"), (std::set<std::string>{"layer_00000.safetensors"}));
}

}  // namespace
}  // namespace fsq
