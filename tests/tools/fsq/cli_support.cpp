#include "cli_support.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "text_files.h"

extern char** environ;

namespace fsq::clitest {
namespace fs = std::filesystem;

namespace {

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

RunResult run_fsq(const std::vector<std::string>& args) {
  const TempDir scratch("fsq-cli-run");
  const fs::path& dir = scratch.path();
  std::string cmd = quote(FSQ_BINARY);
  for (const auto& a : args) cmd.append(" ").append(quote(a));
  cmd.append(" >").append(quote((dir / "out").string()));
  cmd.append(" 2>").append(quote((dir / "err").string())).append(" </dev/null");
  int status = std::system(cmd.c_str());
  RunResult r;
  // The shell reports a child killed by a signal as 128 + signo.
  if (WIFEXITED(status) && WEXITSTATUS(status) < 128) r.exit_code = WEXITSTATUS(status);
  r.out = testing::read_file(dir / "out");
  r.err = testing::read_file(dir / "err");
  return r;
}

pid_t spawn_fsq(const std::vector<std::string>& args, const fs::path& out, const fs::path& err) {
  std::vector<std::string> argv_s = {FSQ_BINARY};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, FSQ_BINARY, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return spawned == 0 ? pid : -1;
}

std::optional<int> wait_for_exit(pid_t pid, std::chrono::milliseconds limit) {
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  while (std::chrono::steady_clock::now() - start < limit) {
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return std::nullopt;
}

KillIfRunning::~KillIfRunning() {
  // 0: still running. The pid pid_ has once it is reaped is no child of ours (ECHILD).
  if (pid_ <= 0 || ::waitpid(pid_, nullptr, WNOHANG) != 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

bool catches_interrupts(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("SigCgt:", 0) != 0) continue;
    const unsigned long long mask = std::stoull(line.substr(7), nullptr, 16);
    const unsigned long long want = (1ull << (SIGINT - 1)) | (1ull << (SIGTERM - 1));
    return (mask & want) == want;
  }
  return false;
}

std::string staging_paths_below(const fs::path& dir) {
  std::string found;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(".tmp") != std::string::npos) found += e.path().string() + "\n";
  return found;
}

int saved_layer_files(const fs::path& partial) {
  std::error_code ec;
  int n = 0;
  for (const auto& e : fs::directory_iterator(partial, ec))
    n += e.path().filename().string().rfind("layer_", 0) == 0 && e.path().extension() == ".safetensors";
  return n;
}

void copy_model_side_files(const fs::path& dir) {
  for (const char* f : {"config.json", "generation_config.json", "tokenizer.model",
                        "tokenizer_config.json", "special_tokens_map.json"}) {
    if (fs::exists(stories260k_dir() / f)) fs::copy_file(stories260k_dir() / f, dir / f);
  }
}

nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(testing::read_file(p)); }

void expect_plan_brackets_peak_rss(const fs::path& quantize_json, double max_over_prediction) {
  const nlohmann::json j = read_json(quantize_json);
  const double measured = j.at("peak_rss_bytes").get<double>();
  const double predicted = j.at("plan").at("predicted_peak_bytes").get<double>();
  constexpr double kMiB = 1024.0 * 1024.0;
  EXPECT_LE(measured, predicted) << quantize_json << ": measured " << measured / kMiB << " MiB, predicted "
                                 << predicted / kMiB << " MiB";
  EXPECT_LE(predicted, max_over_prediction * measured)
      << quantize_json << ": measured " << measured / kMiB << " MiB, predicted " << predicted / kMiB << " MiB";
}

std::pair<int, std::string> shell(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return {-1, ""};
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), p) != nullptr) out += buf.data();
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

Quality evaluate_against_stories260k(const fs::path& model) {
  const fs::path json = model.string() + ".eval.json";
  RunResult r = run_fsq({"eval", "--model", model.string(), "--compare", stories260k_dir().string(), "--data",
                         tinystories_val().string(), "--protocol", "bos-window", "--seq-len", "256", "--max-windows",
                         "32", "--threads", "1", "--no-speed", "--progress", "off", "--json", json.string(), "--force"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = read_json(json);
  return {j["perplexity"]["ppl"].get<double>(), j["compare"]["mean_kl"].get<double>(),
          j["compare"]["top1_agreement"].get<double>()};
}

double smollm2_kl(const fs::path& model, const fs::path& text, const fs::path& json) {
  // Two processes that miss the same key both compute it and rename the same bytes into place;
  // 2 GiB holds the two texts' files (400 MB each) while files of earlier builds are trimmed.
  const fs::path cache = FSQ_TEST_REFERENCE_CACHE;
  fs::create_directories(cache);
  RunResult r = run_fsq({"eval", "--model", model.string(), "--compare", testing::smollm2_hf().string(), "--data",
                         text.string(), "--seq-len", "1024", "--max-windows", "2", "--threads", "1", "--no-speed",
                         "--progress", "off", "--reference-cache", cache.string(), "--reference-cache-max-gib", "2",
                         "--json", json.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return read_json(json)["compare"]["mean_kl"].get<double>();
}

double smollm2_quantized_kl(const fs::path& dir, const std::string& name, const std::vector<std::string>& options) {
  const fs::path out = dir / name, json = dir / (name + ".quantize.json");
  std::vector<std::string> args = {"quantize", "--model", testing::smollm2_hf().string(), "--out", out.string(),
                                   "--threads", "1", "--progress", "off", "--json", json.string()};
  args.insert(args.end(), options.begin(), options.end());
  RunResult q = run_fsq(args);
  EXPECT_EQ(q.exit_code, 0) << q.err;
  if (q.exit_code == 0) expect_plan_brackets_peak_rss(json);
  return smollm2_kl(out, tinystories_val(), dir / (name + ".eval.json"));
}

}  // namespace fsq::clitest
