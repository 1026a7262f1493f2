// fsq calibrate: activation statistics (and optionally Fisher diagonals) of a model on
// calibration text, streamed layer by layer, written as one calibration .safetensors file.
#include <cstdio>

#include "build_info.h"
#include "calib/calibrate.h"
#include "common/error.h"
#include "common/output_lock.h"
#include "options.h"
#include "provenance.h"
#include "runtime/torch_bridge.h"

namespace fsq::cli {
namespace {

struct CalibrateFlags {
  std::string model, data, out, json, progress = "auto";
  WindowDraw draw;
  int64_t batch_size = 8;
  bool fisher = false, force = false;
  RuntimeFlags rt;
};

int run_calibrate(const CalibrateFlags& f) {
  // One writer per output (common/output_lock.h), taken before any work.
  const OutputLock lock = lock_output({f.out, "--out", OutputKind::File, f.force}, {f.model, f.data});
  check_output_file(f.json, "--json", {f.model, f.data, f.out}, f.force);
  CalibrateConfig cfg;
  cfg.model = f.model;
  cfg.data = f.data;
  cfg.out = f.out;
  cfg.draw = f.draw;
  cfg.fisher = f.fisher;
  cfg.batch_size = f.batch_size;
  cfg.runtime = runtime_options(f.rt);
  apply_progress(f.progress);
  cfg.threads = apply_threads(f.rt.threads);
  cfg.tool_version = version();

  CalibrateSummary summary = run_calibration(cfg);
  std::fputs(summary.to_text().c_str(), stdout);
  std::fflush(stdout);
  if (!f.json.empty()) write_json_report(f.json, summary.to_json());
  return 0;
}

}  // namespace

Command add_calibrate_command(CLI::App& root) {
  auto f = std::make_shared<CalibrateFlags>();
  CLI::App* app = root.add_subcommand(
      "calibrate",
      "Run calibration text through a model one decoder layer at a time and record, for the input of "
      "every linear layer, per-channel absmax / mean / mean of squares (and with --fisher the Fisher "
      "diagonal of every linear weight: the mean over samples of the squared per-sample gradient). "
      "Writes one .safetensors file; fsq inspect summarizes it. Read by fsq quantize --method squeezellm "
      "(Fisher) and smoothquant (ranges), fsq plan --calib (variance indicator) and fsq export --format gguf "
      "--calib (importance weights, --awq scales); awq measures its own inputs from --calib-data on the "
      "layers it has already quantized.");
  app->add_option("--model", f->model, "checkpoint directory or .gguf file")->required()->check(CLI::ExistingPath);
  app->add_option("--data", f->data, "calibration text: a .txt file, a folder of .txt files, or a .jsonl with a \"text\" field")
      ->required()
      ->check(CLI::ExistingPath);
  app->add_option("--out", f->out, "calibration file to write (.safetensors, written atomically)")->required();
  app->add_option("--samples", f->draw.samples, "number of calibration windows")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app->add_option("--seq-len", f->draw.seq_len, "tokens per window")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 30));
  app->add_option("--seed", f->draw.seed, "seed of the window positions")->capture_default_str();
  add_allow_overlap_flag(app, f->draw.allow_overlap);
  app->add_flag("--fisher", f->fisher, "also compute Fisher-information diagonals (per-sample squared gradients)");
  app->add_option("--batch-size", f->batch_size, "windows per forward call of the statistics pass")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  app->add_option("--json", f->json, "also write timings, tokens/s and memory as JSON");
  add_force_flag(app, f->force);
  add_progress_flag(app, f->progress);
  add_runtime_flags(app, f->rt);
  app->footer(examples({
      "fsq calibrate --model models/stories260K --data tinystories_val.txt --samples 128 --seq-len 256 --out calib.safetensors",
      "fsq calibrate --model SmolLM2-135M.gguf --data pile_val.jsonl --fisher --out calib.safetensors",
      "fsq inspect calib.safetensors"}));
  return Command{app, [f] { return run_calibrate(*f); }};
}

}  // namespace fsq::cli
