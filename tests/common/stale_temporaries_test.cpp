// Temporaries of dead fsq processes, swept by owner record (common/stale_temporaries.h).
// Each test plays the owners with forked children that note and make their temporaries,
// then wait (a live owner) or SIGKILL themselves (a dead one); TMPDIR points at the test's
// folder, so the records are the test's own.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/atomic_file.h"
#include "common/stale_temporaries.h"
#include "temp_dir.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A forked owner. In the child: `make()` notes and creates its temporaries, then the child
// waits until the parent ends it. kill() SIGKILLs it (no cleanup runs), finish() lets it
// leave through exit() (its atexit handler drops its record when nothing is left).
class Owner {
 public:
  template <class Make>
  explicit Owner(Make make) {
    int ready[2], go[2];
    if (::pipe(ready) != 0 || ::pipe(go) != 0) return;
    std::fflush(nullptr);  // the child leaves by exit(): nothing buffered may be written twice
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(ready[0]);
      ::close(go[1]);
      const int code = make() ? 0 : 3;
      (void)!::write(ready[1], "x", 1);
      char c;
      while (::read(go[0], &c, 1) > 0) {
      }
      std::exit(code);
    }
    ::close(ready[1]);
    ::close(go[0]);
    go_ = go[1];
    char c;
    made_ = ::read(ready[0], &c, 1) == 1;
    ::close(ready[0]);
  }
  ~Owner() { kill(); }
  Owner(const Owner&) = delete;
  Owner& operator=(const Owner&) = delete;

  pid_t pid() const { return pid_; }
  bool made() const { return made_; }
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    reap();
  }
  // Returns the exit code (-1 when it did not exit normally).
  int finish() {
    ::close(go_);
    go_ = -1;
    return reap();
  }

 private:
  int reap() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = 0;
    if (go_ >= 0) ::close(go_);
    go_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  pid_t pid_ = -1;
  int go_ = -1;
  bool made_ = false;
};

// Notes and makes a staging file or folder (by its name) in a child.
bool make_noted(const fs::path& p, bool folder) {
  record_temporary(p);
  if (folder) {
    fs::create_directories(p);
    std::ofstream(p / "part.safetensors") << "half written";
  } else {
    std::ofstream(p) << "half written";
  }
  return fs::exists(p);
}

std::string pid_text() { return std::to_string(::getpid()); }

class StaleTemporaries : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* t = std::getenv("TMPDIR")) saved_tmpdir_ = t;
    ::setenv("TMPDIR", dir_.path().c_str(), 1);
  }
  void TearDown() override {
    if (saved_tmpdir_.empty())
      ::unsetenv("TMPDIR");
    else
      ::setenv("TMPDIR", saved_tmpdir_.c_str(), 1);
  }
  // The records of `pid` in the records folder (file names).
  std::vector<std::string> records_of(pid_t pid) const {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(temporaries_records_folder(), ec))
      if (e.path().filename().string().rfind(std::to_string(pid) + ".", 0) == 0) out.push_back(e.path().filename());
    return out;
  }

  testing::TempDir dir_{"fsq-stale-temporaries"};
  std::string saved_tmpdir_;
};

TEST_F(StaleTemporaries, ADeadOwnersFileAndFolderAreSweptWithItsRecord) {
  const fs::path out = dir_ / "out";
  fs::create_directories(out);
  // What a killed export and a killed quantize leave: AtomicFile's and AtomicDir's staging.
  Owner owner([&] {
    auto* file = new AtomicFile(out / "model.gguf");
    file->write(std::string_view("half written"));
    auto* folder = new AtomicDir(out / "q4");
    std::ofstream(folder->staging() / "model.safetensors") << "half written";
    return true;  // neither is committed nor destroyed: the kill comes first
  });
  ASSERT_TRUE(owner.made());
  const std::string pid = std::to_string(owner.pid());
  fs::path file;  // "model.gguf.tmp.<pid>.<n>": n counts this process's AtomicFiles
  for (const auto& e : fs::directory_iterator(out))
    if (e.path().filename().string().rfind("model.gguf.tmp." + pid + ".", 0) == 0) file = e.path();
  const fs::path folder = out / ("q4.tmp-" + pid);
  ASSERT_TRUE(fs::is_regular_file(file)) << "no staging file of the owner";
  ASSERT_TRUE(fs::is_directory(folder));
  ASSERT_EQ(records_of(owner.pid()).size(), 1u);

  EXPECT_EQ(sweep_stale_temporaries(), 0) << "a live owner's temporaries were removed";
  EXPECT_TRUE(fs::exists(file));
  EXPECT_TRUE(fs::exists(folder));

  const pid_t dead = owner.pid();
  owner.kill();
  EXPECT_EQ(sweep_stale_temporaries(), 2);
  EXPECT_FALSE(fs::exists(file));
  EXPECT_FALSE(fs::exists(folder));
  EXPECT_TRUE(records_of(dead).empty()) << "the dead owner's record was left";
  EXPECT_TRUE(fs::is_directory(out));
}

TEST_F(StaleTemporaries, OnlyNamesThatCarryTheDeadOwnersPidAreRemoved) {
  const fs::path keep_file = dir_ / "notes.txt", keep_folder = dir_ / "data";
  fs::create_directories(keep_folder);
  std::ofstream(keep_file) << "x";
  // A record that lists what is not its owner's staging (a corrupted or hostile record).
  Owner owner([&] {
    record_temporary(keep_file);
    record_temporary(keep_folder);
    record_temporary(dir_ / ("other.tmp." + std::to_string(::getppid()) + ".0"));
    std::ofstream(dir_ / ("other.tmp." + std::to_string(::getppid()) + ".0")) << "x";
    // Its own name with the wrong kind: a folder named like a staging file.
    record_temporary(dir_ / ("x.tmp." + pid_text() + ".0"));
    fs::create_directories(dir_ / ("x.tmp." + pid_text() + ".0"));
    return make_noted(dir_ / ("mine.tmp-" + pid_text()), true);
  });
  ASSERT_TRUE(owner.made());
  const std::string pid = std::to_string(owner.pid());
  owner.kill();
  EXPECT_EQ(sweep_stale_temporaries(), 1);
  EXPECT_FALSE(fs::exists(dir_ / ("mine.tmp-" + pid)));
  EXPECT_TRUE(fs::exists(keep_file));
  EXPECT_TRUE(fs::exists(keep_folder));
  EXPECT_TRUE(fs::exists(dir_ / ("other.tmp." + pid_text() + ".0")));
  EXPECT_TRUE(fs::exists(dir_ / ("x.tmp." + pid + ".0")));
}

// A live process with the dead owner's pid (pid reuse): a record is dead when the process
// with its pid started at another time, and its paths go unless the live owner lists them.
TEST_F(StaleTemporaries, ARecordWhosePidWasReusedIsDead) {
  Owner live([&] { return make_noted(dir_ / ("a.json.tmp." + pid_text() + ".0"), false); });
  ASSERT_TRUE(live.made());
  const std::string pid = std::to_string(live.pid());
  const std::vector<std::string> records = records_of(live.pid());
  ASSERT_EQ(records.size(), 1u);
  const fs::path real = temporaries_records_folder() / records[0];
  const std::string header = read_text(real).substr(0, read_text(real).find('\n') + 1);
  const std::string start = records[0].substr(records[0].find('.') + 1);
  // What an earlier process with this pid noted: one folder of its own, and the name the
  // live one uses now.
  const fs::path old_folder = dir_ / ("b.tmp-" + pid), shared = dir_ / ("a.json.tmp." + pid + ".0");
  fs::create_directories(old_folder);
  std::ofstream(temporaries_records_folder() / (pid + "." + std::to_string(std::stoull(start) + 1)))
      << header << old_folder.string() << "\n" << shared.string() << "\n";
  EXPECT_EQ(sweep_stale_temporaries(), 1);
  EXPECT_FALSE(fs::exists(old_folder));
  EXPECT_TRUE(fs::exists(shared)) << "the live owner's file was removed";
  EXPECT_EQ(records_of(live.pid()), records) << "the earlier process's record was left, or the live one removed";
}

TEST_F(StaleTemporaries, ARecordOfAnotherBootOrPidNamespaceIsLeftAlone) {
  Owner owner([&] { return make_noted(dir_ / ("c.tmp-" + pid_text()), true); });
  ASSERT_TRUE(owner.made());
  const std::vector<std::string> records = records_of(owner.pid());
  ASSERT_EQ(records.size(), 1u);
  const fs::path record = temporaries_records_folder() / records[0];
  std::string text = read_text(record);
  text.replace(0, text.find('\n'), "fsq-owner boot another-boot pidns pid:[1]");
  std::ofstream(record, std::ios::trunc) << text;
  const std::string pid = std::to_string(owner.pid());
  owner.kill();
  EXPECT_EQ(sweep_stale_temporaries(), 0);
  EXPECT_TRUE(fs::exists(dir_ / ("c.tmp-" + pid)));
  EXPECT_TRUE(fs::exists(record));
}

// An owner that exits normally drops its record when its temporaries are gone, and keeps it
// (for the next sweep) when one is left.
TEST_F(StaleTemporaries, AnOwnerLeavingNormallyDropsItsRecordOnlyWhenNothingIsLeft) {
  Owner clean([&] {
    const fs::path p = dir_ / ("d.tmp-" + pid_text());
    make_noted(p, true);
    fs::remove_all(p);
    return true;
  });
  const pid_t clean_pid = clean.pid();
  ASSERT_EQ(records_of(clean_pid).size(), 1u);
  EXPECT_EQ(clean.finish(), 0);
  EXPECT_TRUE(records_of(clean_pid).empty());

  Owner messy([&] { return make_noted(dir_ / ("e.json.tmp." + pid_text() + ".0"), false); });
  const pid_t messy_pid = messy.pid();
  EXPECT_EQ(messy.finish(), 0);
  EXPECT_EQ(records_of(messy_pid).size(), 1u);
  EXPECT_EQ(sweep_stale_temporaries(), 1);
  EXPECT_TRUE(records_of(messy_pid).empty());
}

// The records decide what is deleted: in a records folder that others may write, none is
// read or made.
TEST_F(StaleTemporaries, ARecordsFolderOthersMayWriteIsNotUsed) {
  Owner owner([&] { return make_noted(dir_ / ("f.tmp-" + pid_text()), true); });
  ASSERT_TRUE(owner.made());
  const fs::path folder = dir_ / ("f.tmp-" + std::to_string(owner.pid()));
  owner.kill();
  fs::permissions(temporaries_records_folder(), fs::perms::all);
  Owner another([&] { return make_noted(dir_ / ("h.tmp-" + pid_text()), true); });
  ASSERT_TRUE(another.made());
  EXPECT_TRUE(records_of(another.pid()).empty()) << "a record was made in a folder others may write";
  EXPECT_EQ(sweep_stale_temporaries(), 0);
  EXPECT_TRUE(fs::exists(folder));
  fs::permissions(temporaries_records_folder(), fs::perms::owner_all);
  EXPECT_EQ(sweep_stale_temporaries(), 1);
  EXPECT_FALSE(fs::exists(folder));
}

}  // namespace
}  // namespace fsq
