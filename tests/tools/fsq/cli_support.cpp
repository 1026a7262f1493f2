#include "cli_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace fsq::clitest {
namespace fs = std::filesystem;

namespace {

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

RunResult run_fsq(const std::vector<std::string>& args) {
  fs::path dir = temp_dir("run");
  std::string cmd = quote(FSQ_BINARY);
  for (const auto& a : args) cmd.append(" ").append(quote(a));
  cmd.append(" >").append(quote((dir / "out").string()));
  cmd.append(" 2>").append(quote((dir / "err").string())).append(" </dev/null");
  int status = std::system(cmd.c_str());
  RunResult r;
  // The shell reports a child killed by a signal as 128 + signo.
  if (WIFEXITED(status) && WEXITSTATUS(status) < 128) r.exit_code = WEXITSTATUS(status);
  r.out = slurp(dir / "out");
  r.err = slurp(dir / "err");
  fs::remove_all(dir);
  return r;
}

fs::path stories_dir() { return fs::path(FSQ_SHARED_DIR) / "models" / "stories260K"; }

fs::path tinystories_val() {
  return fs::path(FSQ_SHARED_DIR) / "data" / "tinystories" / "tinystories_val.txt";
}

bool fixture_present() {
  return fs::exists(stories_dir() / "model.safetensors") && fs::exists(stories_dir() / "tokenizer.model") &&
         fs::exists(tinystories_val());
}

fs::path temp_dir(const std::string& name) {
  static std::atomic<int> counter{0};
  fs::path p = fs::temp_directory_path() /
               ("fsq_cli_" + name + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

void copy_model_side_files(const fs::path& dir) {
  for (const char* f : {"config.json", "generation_config.json", "tokenizer.model",
                        "tokenizer_config.json", "special_tokens_map.json"}) {
    if (fs::exists(stories_dir() / f)) fs::copy_file(stories_dir() / f, dir / f);
  }
}

nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(slurp(p)); }

size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace fsq::clitest
