#include "cli_support.h"

#include <sys/wait.h>

#include <cstdlib>

#include "text_files.h"

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
  fs::path dir = make_temp_dir("fsq-cli-run");
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
  fs::remove_all(dir);
  return r;
}

void copy_model_side_files(const fs::path& dir) {
  for (const char* f : {"config.json", "generation_config.json", "tokenizer.model",
                        "tokenizer_config.json", "special_tokens_map.json"}) {
    if (fs::exists(stories260k_dir() / f)) fs::copy_file(stories260k_dir() / f, dir / f);
  }
}

nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(testing::read_file(p)); }

void expect_plan_brackets_peak_rss(const fs::path& quantize_json) {
  const nlohmann::json j = read_json(quantize_json);
  const double measured = j.at("peak_rss_bytes").get<double>();
  const double predicted = j.at("plan").at("predicted_peak_bytes").get<double>();
  constexpr double kMiB = 1024.0 * 1024.0;
  EXPECT_LE(measured, predicted) << quantize_json << ": measured " << measured / kMiB << " MiB, predicted "
                                 << predicted / kMiB << " MiB";
  EXPECT_LE(predicted, kPlanMaxOverPrediction * measured)
      << quantize_json << ": measured " << measured / kMiB << " MiB, predicted " << predicted / kMiB << " MiB";
}

size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace fsq::clitest
