#include "options.h"

#include <thread>

#include "common/error.h"
#include "runtime/model.h"

namespace fsq::cli {

void add_runtime_flags(CLI::App* app, RuntimeFlags& flags) {
  flags.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  app->add_option("--threads", flags.threads, "CPU threads for LibTorch and OpenMP")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app->add_option("--device", flags.device, "cpu, cuda or cuda:N")->capture_default_str();
  app->add_option("--dtype", flags.dtype, "compute dtype")
      ->capture_default_str()
      ->check(CLI::IsMember({"f32", "bf16", "f16"}));
}

int apply_threads(int threads) { return fsq::set_threads(threads); }

void add_progress_flag(CLI::App* app, std::string& mode) {
  app->add_option("--progress", mode,
                  "progress display on stderr: a bar on a terminal, periodic lines otherwise")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "bar", "lines", "off"}));
}

ProgressMode apply_progress(const std::string& mode) {
  ProgressMode m = mode == "bar" ? ProgressMode::Bar
                   : mode == "lines" ? ProgressMode::Lines
                   : mode == "off" ? ProgressMode::Off
                                   : ProgressMode::Auto;
  Progress::set_default_mode(m);
  return m;
}

void check_output_folder(const std::filesystem::path& out, const std::string& option) {
  std::filesystem::path dir = out.parent_path();
  if (dir.empty()) return;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw Error(option, "output folder does not exist: " + dir.string());
}

std::string examples(std::initializer_list<const char*> lines) {
  std::string s = "\nExamples:\n";
  for (const char* l : lines) s += std::string("  ") + l + "\n";
  return s;
}

std::string version() { return FSQ_VERSION; }

}  // namespace fsq::cli
