// Issue 58, items 1 and 2, end to end on stories260K.
//
// One writer per output: two fsq runs (quantize, calibrate, export, convert) to the same output are
// started at once and then waited for; exactly one writes it, the other refuses in one line
// naming the first one's pid, and nothing of the refused run is left. The first run takes
// "<out>.fsq-lock" (common/output_lock.h) before any work; so that a fast command cannot
// finish before the other reaches the lock, the test stops the holder (SIGSTOP) as soon as
// the lock file names it and lets it go on (SIGCONT) once the other has exited. Without the
// lock no lock file appears, nothing is stopped, and both runs write.
//
// Special files: an output that is a FIFO or a socket (made here, never a real /dev node) is
// refused with --force in one line and stays what it was; the run does not block on the FIFO.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include "cli_support.h"
#include "common/output_lock.h"
#include "text_files.h"
#include "tiny_gguf.h"

namespace fsq::clitest {
namespace {
namespace fs = std::filesystem;

constexpr auto kPairLimit = std::chrono::minutes(5);

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The pid written in the lock file of `out`, 0 when there is none (yet).
pid_t lock_holder(const fs::path& out) {
  const std::string text = read_text(OutputLock::lock_path(out));
  if (text.empty() || text.back() != '\n') return 0;
  return static_cast<pid_t>(std::atol(text.c_str()));
}

struct Pair {
  pid_t pid[2] = {0, 0};
  int status[2] = {-1, -1};
  std::string err[2];
  pid_t stopped = 0;  // the lock holder the test held back while the other ran
};

// Starts both runs at once, then waits for both (see the file comment for the SIGSTOP).
Pair run_two_at_once(const std::vector<std::string>& a, const std::vector<std::string>& b, const fs::path& out,
                     const fs::path& logs) {
  Pair r;
  r.pid[0] = spawn_fsq(a, logs / "a.out", logs / "a.err");
  r.pid[1] = spawn_fsq(b, logs / "b.out", logs / "b.err");
  if (r.pid[0] <= 0 || r.pid[1] <= 0) {
    ADD_FAILURE() << "could not start fsq";
    return r;
  }
  bool done[2] = {false, false}, continued = false;
  const auto start = std::chrono::steady_clock::now();
  while (!(done[0] && done[1])) {
    for (int i = 0; i < 2; ++i) {
      int st = 0;
      if (!done[i] && ::waitpid(r.pid[i], &st, WNOHANG) == r.pid[i]) {
        done[i] = true;
        r.status[i] = st;
      }
    }
    if (r.stopped == 0) {
      const pid_t holder = lock_holder(out);
      if ((holder == r.pid[0] && !done[0]) || (holder == r.pid[1] && !done[1])) {
        ::kill(holder, SIGSTOP);
        r.stopped = holder;
      }
    } else if (!continued && (done[r.stopped == r.pid[0] ? 1 : 0] ||
                              std::chrono::steady_clock::now() - start > kPairLimit)) {
      ::kill(r.stopped, SIGCONT);
      continued = true;
    }
    if (std::chrono::steady_clock::now() - start > 2 * kPairLimit) {
      for (int i = 0; i < 2; ++i)
        if (!done[i]) ::kill(r.pid[i], SIGKILL);
      ADD_FAILURE() << "the runs did not finish";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  r.err[0] = read_text(logs / "a.err");
  r.err[1] = read_text(logs / "b.err");
  return r;
}

bool exited_with(int status, int code) { return WIFEXITED(status) && WEXITSTATUS(status) == code; }

// Exactly one run wrote (exit 0) and it was the lock holder; the other refused in one line
// naming --out and the writer's pid, and no lock file is left. Returns the writer's index.
int expect_one_writer(const Pair& r, const fs::path& out) {
  const int winners = exited_with(r.status[0], 0) + exited_with(r.status[1], 0);
  EXPECT_EQ(winners, 1) << "exit statuses " << r.status[0] << " and " << r.status[1] << "\nA: " << r.err[0]
                        << "\nB: " << r.err[1];
  const int w = exited_with(r.status[0], 0) ? 0 : 1, l = 1 - w;
  EXPECT_EQ(r.stopped, r.pid[w]) << "no lock file named the writer (the lock was never taken?)";
  EXPECT_TRUE(WIFEXITED(r.status[l]) && WEXITSTATUS(r.status[l]) > 0) << r.status[l];
  EXPECT_EQ(lines(r.err[l]), 1u) << r.err[l];
  EXPECT_NE(r.err[l].find("--out " + out.string()), std::string::npos) << r.err[l];
  EXPECT_NE(r.err[l].find("another fsq process (pid " + std::to_string(r.pid[w]) + ")"), std::string::npos)
      << r.err[l];
  EXPECT_FALSE(fs::exists(OutputLock::lock_path(out))) << "lock file left";
  EXPECT_EQ(staging_paths_below(out.parent_path()), "");
  return w;
}

class CliOneWriter : public ::testing::Test {
 protected:
  void SetUp() override {
    FSQ_REQUIRE_STORIES260K();
    dir_ = make_temp_dir_caller_removes("fsq-cli-one-writer");
    text_ = dir_ / "calib.txt";
    testing::write_file(text_, testing::tail_of(tinystories_val(), 200'000));
    fs::create_directories(dir_ / "logs");
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  std::vector<std::string> quantize_args(const fs::path& out, int seed) const {
    return {"quantize", "--model", stories260k_dir().string(), "--method", "awq", "--bits", "4", "--group-size", "32",
            "--calib-data", text_.string(), "--samples", "16", "--seq-len", "128", "--seed", std::to_string(seed),
            "--threads", "1", "--progress", "off", "--out", out.string()};
  }
  std::vector<std::string> calibrate_args(const fs::path& out, int seed) const {
    return {"calibrate", "--model", stories260k_dir().string(), "--data", text_.string(), "--samples", "16",
            "--seq-len", "128", "--seed", std::to_string(seed), "--threads", "1", "--progress", "off",
            "--out", out.string()};
  }

  fs::path dir_, text_;
};

TEST_F(CliOneWriter, TwoQuantizeRunsToOneOutputWriteOneRunsFolder) {
  const fs::path out = dir_ / "q4";
  const Pair r = run_two_at_once(quantize_args(out, 1), quantize_args(out, 2), out, dir_ / "logs");
  const int w = expect_one_writer(r, out);
  EXPECT_FALSE(fs::exists(dir_ / "q4.partial")) << "partial layers left";
  ASSERT_TRUE(fs::exists(out / "fsq.json"));
  const nlohmann::json manifest = read_json(out / "fsq.json");
  EXPECT_EQ(manifest["calibration"]["seed"], w == 0 ? 1 : 2) << "the folder is not the writer's run";
  // Every layer is the writer's: the same weights as that run alone.
  RunResult alone = run_fsq(quantize_args(dir_ / "alone", w == 0 ? 1 : 2));
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  const nlohmann::json want = read_json(dir_ / "alone" / "fsq.json")["tensor_sha256"];
  std::string differ;
  for (const auto& [name, sha] : want.items())
    if (manifest["tensor_sha256"].value(name, "") != sha) differ += " " + name;
  EXPECT_EQ(differ, "") << "tensors unlike the writer's run alone (a mix of both runs)";
  EXPECT_EQ(manifest["tensor_sha256"].size(), want.size());
}

TEST_F(CliOneWriter, TwoCalibrateRunsToOneFileWriteOnce) {
  const fs::path out = dir_ / "calib.safetensors";
  auto a = calibrate_args(out, 1), b = calibrate_args(out, 2);
  b.push_back("--force");  // even allowed to replace, it may not write while the other does
  const Pair r = run_two_at_once(a, b, out, dir_ / "logs");
  expect_one_writer(r, out);
  EXPECT_TRUE(fs::is_regular_file(out));
}

TEST_F(CliOneWriter, TwoExportRunsToOneFolderWriteOnce) {
  RunResult q = run_fsq({"quantize", "--model", stories260k_dir().string(), "--method", "rtn", "--bits", "4",
                         "--group-size", "32", "--threads", "1", "--progress", "off", "--out", (dir_ / "q4").string()});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  const fs::path out = dir_ / "ct";
  const std::vector<std::string> args = {"export", "--format", "compressed-tensors", (dir_ / "q4").string(),
                                         out.string()};
  const Pair r = run_two_at_once(args, args, out, dir_ / "logs");
  expect_one_writer(r, out);
  EXPECT_TRUE(fs::exists(out / "config.json"));
}

TEST_F(CliOneWriter, TwoConvertRunsToOneFolderWriteOnce) {
  const fs::path gguf = dir_ / "tiny.gguf";
  write_tiny_llama_gguf(gguf);
  const fs::path out = dir_ / "hf";
  const std::vector<std::string> args = {"convert", "--from", "gguf", gguf.string(), "--out", out.string()};
  const Pair r = run_two_at_once(args, args, out, dir_ / "logs");
  expect_one_writer(r, out);
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.model"}) EXPECT_TRUE(fs::exists(out / f)) << f;
  const RunResult inspect = run_fsq({"inspect", out.string()});
  EXPECT_EQ(inspect.exit_code, 0) << inspect.err;
}

TEST_F(CliOneWriter, ALockLeftByAKilledRunIsTakenOver) {
  const fs::path out = dir_ / "calib.safetensors";
  // A process that took the lock and was killed leaves the file; its flock died with it.
  const pid_t pid = spawn_fsq(calibrate_args(out, 1), dir_ / "logs" / "k.out", dir_ / "logs" / "k.err");
  ASSERT_GT(pid, 0);
  const auto start = std::chrono::steady_clock::now();
  while (lock_holder(out) != pid && std::chrono::steady_clock::now() - start < std::chrono::minutes(1))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ::kill(pid, SIGKILL);
  int st = 0;
  ::waitpid(pid, &st, 0);
  if (!WIFSIGNALED(st)) GTEST_SKIP() << "the run finished before it could be killed";
  ASSERT_EQ(lock_holder(out), pid) << "the killed run left no lock file";
  RunResult again = run_fsq(calibrate_args(out, 1));
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(fs::is_regular_file(out));
  EXPECT_FALSE(fs::exists(OutputLock::lock_path(out)));
}

// --- special files ---

TEST_F(CliOneWriter, ForceNeverReplacesAFifoOrASocket) {
  const fs::path fifo = dir_ / "report.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  const fs::path sock = dir_ / "calib.sock";
  {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    ASSERT_LT(sock.string().size(), sizeof addr.sun_path);
    std::strcpy(addr.sun_path, sock.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
    ::close(fd);
  }
  const fs::path link = dir_ / "link.json";
  fs::create_symlink(fifo, link);
  auto expect_refused = [](const RunResult& r, const std::string& option, const fs::path& path,
                           const std::string& kind) {
    EXPECT_GT(r.exit_code, 0) << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find(option + " " + path.string()), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(kind), std::string::npos) << r.err;
  };
  expect_refused(run_fsq({"inspect", stories260k_dir().string(), "--json", fifo.string(), "--force"}), "--json",
                 fifo, "FIFO");
  expect_refused(run_fsq({"inspect", stories260k_dir().string(), "--json", link.string(), "--force"}), "--json",
                 link, "FIFO");
  auto cal = calibrate_args(sock, 1);
  cal.push_back("--force");
  expect_refused(run_fsq(cal), "--out", sock, "socket");
  EXPECT_EQ(fs::symlink_status(fifo).type(), fs::file_type::fifo);
  EXPECT_EQ(fs::symlink_status(link).type(), fs::file_type::symlink);
  EXPECT_EQ(fs::symlink_status(sock).type(), fs::file_type::socket);
  EXPECT_FALSE(fs::exists(OutputLock::lock_path(sock)));
}

}  // namespace
}  // namespace fsq::clitest
