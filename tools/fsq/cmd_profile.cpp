// fsq profile: LLM-PQ's profiler on the bundled runtime. Times a model's decoder layers and
// head at each weight width the planner assigns, over a grid of micro-batch sizes and
// lengths, and writes the fitted latency model that fsq plan --profile uses instead of its
// roofline defaults for that device type. Widths below 16 are made by rtn into a temporary
// packed checkpoint (latency depends on the packed format, not on which pass rounded it).
#include <nlohmann/json.hpp>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <unistd.h>

#include "build_info.h"
#include "common/error.h"
#include "common/process.h"
#include "common/stale_temporaries.h"
#include "common/staging.h"
#include "options.h"
#include "plan/latency_profile.h"
#include "plan/model_spec.h"
#include "provenance.h"
#include "quantize/quantize_model.h"
#include "runtime/cpu/cpu_isa.h"
#include "runtime/eval/layer_latency.h"
#include "runtime/model_files.h"

namespace fsq::cli {
namespace {

namespace fs = std::filesystem;

struct ProfileFlags {
  std::string model, out, device_name = "cpu", work_dir;
  std::vector<int> widths = {3, 4, 8, 16};
  int group_size = 128;
  LatencyGrid grid;
  bool json_stdout = false, force = false;
  RuntimeFlags rt;
};

// How each width is stored: 3/4 group-wise asymmetric (the planner's g128 widths), 8 per
// output channel symmetric (the int8 path), 16 the source weights.
UniformQuant width_quant(int bits, int group_size) {
  return bits == 8 ? UniformQuant{8, 0, true} : UniformQuant{bits, group_size, false};
}

std::string width_label(int bits, int group_size) {
  if (bits == 16) return "16 (source weights)";
  if (bits == 8) return "8 (rtn, per channel, symmetric)";
  return std::to_string(bits) + " (rtn g" + std::to_string(group_size) + ")";
}

// A temporary folder for the packed checkpoints, "<parent>/fsq-profile.tmp-<pid>", removed
// however the run ends: by the destructor, on SIGINT/SIGTERM by the staging registry
// (common/staging.h), and after a SIGKILL by the next fsq run (common/stale_temporaries.h).
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& parent) {
    const fs::path base = parent.empty() ? fs::temp_directory_path() : fs::path(parent);
    const fs::path name = base / "fsq-profile";
    sweep_stale_staging(name, StagingKind::Folder);  // dead runs' folders here, noted or not
    path_ = base / staging_name(name.filename().string(), StagingKind::Folder, ::getpid());
    record_temporary(path_);
    create_staging(path_, [&] {
      std::error_code ec;
      fs::remove_all(path_, ec);  // a crashed process of the same pid left it
      if (!fs::create_directory(path_, ec))
        throw Error(path_.string(), "cannot create the scratch folder: " + (ec ? ec.message() : "it already exists"));
    });
  }
  ~ScratchDir() {
    remove_staging(path_, [&] {
      std::error_code ec;
      fs::remove_all(path_, ec);
    });
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::unique_ptr<LlamaModel> model_at_width(const ProfileFlags& f, int bits, const RuntimeOptions& ro, const ScratchDir& scratch,
                                           ModelFiles& files) {
  if (bits == 16) {
    files = ModelFiles::open(f.model);
    return files.load(ro);
  }
  QuantizeConfig cfg;
  cfg.model = f.model;
  cfg.out = scratch.path() / ("w" + std::to_string(bits));
  cfg.method = "rtn";
  cfg.quant = width_quant(bits, f.group_size);
  cfg.head_bits = 16;  // the same head at every width: it is timed on its own
  cfg.runtime = ro;
  cfg.resume = false;
  cfg.threads = f.rt.threads;
  cfg.producer = producer_json();
  run_quantize(cfg, [](const std::string&) {});
  files = ModelFiles::open(cfg.out);
  return files.load(ro);
}

std::string measured_on(const ProfileFlags& f) {
  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  return "fsq " + version() + " CPU runtime (" + cpu::cpu_isa_name(cpu::selected_cpu_isa()) + "), " +
         std::to_string(f.rt.threads) + " threads, " + f.rt.dtype + " activations, " + date;
}

void print_fits(const plan::LatencyProfile& p) {
  std::printf("%-6s %-8s %12s %14s %16s %7s %9s\n", "width", "phase", "fixed us", "us per token", "us per tok*len", "r2",
              "max err");
  auto row = [](const char* width, const char* phase, const plan::LatencyFit& fit, bool head) {
    std::printf("%-6s %-8s %12.1f %14.3f %16.6f %7.4f %8.1f%%\n", width, phase, fit.coef[0] * 1e6, fit.coef[1] * 1e6,
                head ? 0.0 : fit.coef[2] * 1e6, fit.r2, fit.max_rel_residual * 100);
  };
  for (int b : p.widths) {
    const std::string w = std::to_string(b);
    row(w.c_str(), "prefill", p.prefill.at(b), false);
    row(w.c_str(), "decode", p.decode.at(b), false);
  }
  row("head", "prefill", p.head_prefill, true);
  row("head", "decode", p.head_decode, true);
  std::printf("(per layer; prefill terms: 1, batch*tokens, batch*tokens^2; decode: 1, batch, batch*context; head: 1, batch)\n");
}

int run_profile(const ProfileFlags& f) {
  if (f.rt.device != "cpu")
    throw Error("--device " + f.rt.device,
                "fsq profile times the CPU runtime; the CUDA runtime cannot run a whole model yet (issue 20)");
  if (is_packed_folder(f.model))
    throw Error(f.model, "is a packed checkpoint: profile the source Hugging Face folder (fsq profile makes each width itself)");
  for (int b : f.widths)
    if (!plan::is_supported_width(b)) throw Error("--widths", "expected 3, 4, 8 or 16, got " + std::to_string(b));
  check_output_file(f.out, "--out", {f.model}, f.force);
  const plan::ModelSpec spec = plan::load_model_spec(f.model);
  if (spec.family != plan::Family::kLlama)
    throw Error(f.model, "fsq profile runs LLaMA-family models (the bundled runtime); OPT and BLOOM are planned from presets");

  check_latency_grid(f.grid, ModelFiles::open(f.model).config().max_position_embeddings);
  apply_threads(f.rt.threads);
  const RuntimeOptions ro = runtime_options(f.rt);
  plan::LatencyProfile p;
  p.device = f.device_name;
  p.memory_gib = static_cast<double>(physical_memory_bytes()) / (1024.0 * 1024.0 * 1024.0);
  p.measured_on = measured_on(f);
  p.model_name = spec.name;
  p.hidden = spec.hidden;
  p.ffn = spec.ffn;
  p.heads = spec.heads;
  p.kv_heads = spec.kv_heads;
  p.vocab = spec.vocab;
  p.widths = f.widths;
  ScratchDir scratch(f.work_dir);
  for (int bits : f.widths) {
    std::fprintf(stderr, "profile: %s-bit layers: %s\n", std::to_string(bits).c_str(), width_label(bits, f.group_size).c_str());
    ModelFiles files;
    std::unique_ptr<LlamaModel> model = model_at_width(f, bits, ro, scratch, files);
    const bool tty = ::isatty(STDERR_FILENO) != 0;
    auto points = measure_layer_latency(*model, f.grid, [&](int done, int total) {
      if (tty) std::fprintf(stderr, "\rprofile: %d-bit %d/%d points", bits, done, total);
      if (done == total) std::fprintf(stderr, "%sprofile: %d-bit: %d points timed\n", tty ? "\r" : "", bits, total);
    });
    const bool first = p.samples.empty();
    for (const auto& x : points) {
      const plan::Phase phase = x.prefill ? plan::Phase::kPrefill : plan::Phase::kDecode;
      p.samples.push_back({phase, bits, x.batch, x.tokens, x.context, x.layer_seconds});
      // The head is the same at every width (kept as in the source): its times from the first.
      if (first) p.samples.push_back({phase, 0, x.batch, 1, 0, x.head_seconds});
    }
  }
  fit_profile(p);

  nlohmann::json j = plan::profile_to_json(p);
  j["widths_stored_as"] = nlohmann::json::object();
  for (int b : f.widths) j["widths_stored_as"][std::to_string(b)] = width_label(b, f.group_size);
  j["model"]["path"] = f.model;
  j["producer"] = producer_json();
  write_json_report(f.out, j);
  if (f.json_stdout) {
    j["invocation"] = invocation_json();
    std::fputs((j.dump(2) + "\n").c_str(), stdout);
    return 0;
  }
  std::printf("%s on %s: %s\n", spec.name.c_str(), p.device.c_str(), p.measured_on.c_str());
  print_fits(p);
  std::printf("wrote %s (fsq plan --profile %s --gpu %s, or a cluster with %s devices)\n", f.out.c_str(), f.out.c_str(),
              p.device.c_str(), p.device.c_str());
  return 0;
}

}  // namespace

Command add_profile_command(CLI::App& root) {
  auto f = std::make_shared<ProfileFlags>();
  CLI::App* app = root.add_subcommand(
      "profile",
      "Measure a model's per-layer latencies on this machine (LLM-PQ's profiler): prompts of several micro-batch "
      "sizes and lengths and decode steps over several cached lengths, at each weight width the planner assigns "
      "(3 and 4: rtn group-wise, 8: int8 per channel, 16: source weights), through the bundled runtime. Fits a "
      "linear model per width and phase and writes it as a profile that fsq plan --profile uses instead of the "
      "roofline for that device type. Needs the model's weights (random ones time the same but the quantizer "
      "wants a checkpoint).");
  add_force_flag(app, f->force);
  add_runtime_flags(app, f->rt);
  app->add_option("--model", f->model, "Hugging Face checkpoint folder (LLaMA family)")->required()->check(CLI::ExistingDirectory);
  app->add_option("--out", f->out, "profile JSON to write (atomically)")->required();
  app->add_option("--widths", f->widths, "weight widths to time (3, 4, 8, 16)")->delimiter(',')->capture_default_str();
  app->add_option("--group-size", f->group_size, "group size of the 3/4-bit widths")
      ->check(CLI::IsMember({32, 64, 128}))
      ->capture_default_str();
  app->add_option("--device-name", f->device_name,
                  "the device type the profile stands for in fsq plan (a GPU table name, or a new type such as cpu)")
      ->capture_default_str();
  app->add_option("--prefill-batches", f->grid.prefill_batches, "sequences per timed prompt")->delimiter(',')->capture_default_str();
  app->add_option("--prefill-lengths", f->grid.prefill_lengths, "prompt lengths")->delimiter(',')->capture_default_str();
  app->add_option("--decode-batches", f->grid.decode_batches, "sequences per timed decode step")->delimiter(',')->capture_default_str();
  app->add_option("--decode-contexts", f->grid.decode_contexts, "cached positions before the timed steps")
      ->delimiter(',')
      ->capture_default_str();
  app->add_option("--decode-steps", f->grid.decode_steps, "timed decode steps per repetition")->capture_default_str();
  app->add_option("--min-seconds", f->grid.min_seconds, "repeat each point until this much time was spent (median)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_option("--work-dir", f->work_dir, "where the temporary packed checkpoints go (default: the system temp folder)")
      ->check(CLI::ExistingDirectory);
  app->add_flag("--json", f->json_stdout, "print the profile as JSON instead of the table");
  app->footer(examples({"fsq profile --model models/smollm2 --out cpu.json",
                        "fsq plan --model models/smollm2 --gpu cpu --profile cpu.json --bits 3,4,8,16",
                        "fsq profile --model DIR --widths 4,16 --decode-batches 1,8 --threads 1 --out one-core.json"}));
  return Command{app, [f] { return run_profile(*f); }};
}

}  // namespace fsq::cli
