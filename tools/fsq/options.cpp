#include "options.h"

#include <ATen/ATen.h>

#include <thread>

#include "common/error.h"
#include "common/output_path.h"
#include "runtime/model.h"
#include "runtime/threads.h"

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

void add_decode_flags(CLI::App* app, RuntimeFlags& flags) {
  app->add_option("--decode-activations", flags.decode_activations,
                  "inputs of the 3/4/8-bit linears (uniform, and squeezellm LUTs with their centroids "
                  "rounded to int8) when decoding token by token: int8 per 32 columns, multiplied in integers "
                  "(fast, as llama.cpp's Q8_0), or f32 (exact)")
      ->capture_default_str()
      ->check(CLI::IsMember({"int8", "f32"}));
  app->add_option("--prefill-activations", flags.prefill_activations,
                  "inputs of the 2/3/4-bit and symmetric 8-bit linears (and squeezellm LUTs with their centroids "
                  "rounded to int8) in prompts and perplexity windows: int8 per 32 columns multiplied in integers "
                  "(AVX-512 VNNI, 3-bit LUTs also VBMI; as llama.cpp processes prompts; SmolLM2 W4: KL vs fp +1 % "
                  "uniform, +4-8 % squeezellm, W3 squeezellm +2 %, perplexity +0.3-1.5 %), or f32 (exact: "
                  "dequantized weights, f32 GEMM)")
      ->capture_default_str()
      ->check(CLI::IsMember({"int8", "f32"}));
}

RuntimeOptions runtime_options(const RuntimeFlags& flags, DeviceRequest* decoder) {
  RuntimeOptions ro;
  ro.int8_decode_activations = flags.decode_activations == "int8";
  ro.int8_prefill_activations = flags.prefill_activations == "int8";
  const DeviceRequest device = parse_device_request(flags.device, decoder != nullptr);
  ro.device = device.load_device;
  if (decoder) *decoder = device;
  ro.compute_dtype = parse_compute_dtype(flags.dtype);
  return ro;
}

c10::ScalarType parse_compute_dtype(const std::string& name) {
  if (name == "f32" || name == "float32" || name == "fp32") return at::kFloat;
  if (name == "bf16" || name == "bfloat16") return at::kBFloat16;
  if (name == "f16" || name == "float16" || name == "fp16" || name == "half") return at::kHalf;
  throw Error("--dtype " + name, "unknown dtype; use f32, bf16 or f16");
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

void add_force_flag(CLI::App* app, bool& force) {
  app->add_flag("--force", force, "replace output files that already exist (never an input)");
}

void add_allow_overlap_flag(CLI::App* app, bool& allow) {
  app->add_flag("--allow-overlap", allow,
                "accept calibration text with fewer tokens than --samples x --seq-len (the windows then "
                "overlap; a note says so); without it such text is refused");
}

void check_output_file(const std::string& out, const std::string& option, const std::vector<std::filesystem::path>& inputs,
                       bool force) {
  if (out.empty() || out == "-") return;
  check_output_path({out, option, OutputKind::File, force}, inputs);
}

void check_output_folder(const std::string& out, const std::string& option,
                         const std::vector<std::filesystem::path>& inputs) {
  check_output_path({out, option, OutputKind::Folder, false}, inputs);
}

std::string examples(std::initializer_list<const char*> lines) {
  std::string s = "\nExamples:\n";
  for (const char* l : lines) s += std::string("  ") + l + "\n";
  return s;
}

}  // namespace fsq::cli
