// fsq plan: LLM-PQ plans for a cluster of (possibly different) GPUs: device order, layers
// per stage, bits per layer and micro-batch sizes, with the Uniform and PipeEdge baselines
// in the same cost model. Needs no weights: a config.json or a named preset is enough.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <memory>
#include <span>

#include "common/error.h"
#include "options.h"
#include "calib/calib_file.h"
#include "formats/architectures.h"
#include "formats/checkpoint.h"
#include "formats/gguf/gguf_model.h"
#include "formats/gguf/gguf_reader.h"
#include "plan/bit_assignment.h"
#include "plan/cluster.h"
#include "plan/latency_profile.h"
#include "plan/plan_report.h"
#include "plan/planner.h"
#include "provenance.h"
#include "width_option.h"
#include "quantize/variance_indicator.h"

namespace fsq::cli {
namespace {

struct Flags {
  std::string model, preset, cluster, gpu, gpu_specs, out, calib;
  int64_t group_size = 128;
  int64_t prompt_len = 512, new_tokens = 100, batch = 32;
  int kv_bits = 16;
  std::vector<std::string> bits_text = {"3", "4", "8", "16"};  // --bits, through parse_width into bits
  std::vector<int> bits;
  double theta = 0, max_omega = -1, target_bits = -1;
  int quality_of = 0;
  std::string solver = "ilp";
  double time_limit = 10;
  int group = 0;
  double memory_fraction = 0.9;
  bool json_stdout = false, force = false, list_gpus = false, list_presets = false;
  bool per_linear = false;
  std::vector<std::string> profiles;
};

int list(const Flags& f) {
  if (f.list_gpus) {
    plan::GpuSpecTable gpus = plan::GpuSpecTable::builtin();
    if (!f.gpu_specs.empty()) gpus.merge(plan::GpuSpecTable::load(f.gpu_specs));
    std::printf("%-16s %8s %12s %10s %10s\n", "type", "mem GiB", "fp16 TFLOPS", "int8 TOPS", "BW GB/s");
    for (const auto& g : gpus.all())
      std::printf("%-16s %8.0f %12.1f %10.1f %10.0f\n", g.name.c_str(), g.memory_gib, g.fp16_tflops, g.int8_tops, g.bandwidth_gbs);
  }
  if (f.list_presets) {
    std::printf("%-14s %7s %7s %7s %6s %6s %8s\n", "preset", "layers", "hidden", "ffn", "heads", "kv", "vocab");
    for (const auto& name : plan::model_preset_names()) {
      plan::ModelSpec m = plan::model_preset(name);
      std::printf("%-14s %7lld %7lld %7lld %6lld %6lld %8lld\n", name.c_str(), static_cast<long long>(m.layers),
                  static_cast<long long>(m.hidden), static_cast<long long>(m.ffn), static_cast<long long>(m.heads),
                  static_cast<long long>(m.kv_heads), static_cast<long long>(m.vocab));
    }
  }
  return 0;
}

// A model folder or config.json, or a llama.cpp .gguf (its metadata as the config.json keys).
plan::ModelSpec load_spec(const std::string& model) {
  if (!is_gguf_path(model)) return plan::load_model_spec(model);
  const ModelConfig c = model_config_from_gguf(*GgufFile::open(model));
  const nlohmann::json j = {{"model_type", c.model_type},
                            {"hidden_size", c.hidden_size},
                            {"intermediate_size", c.intermediate_size},
                            {"num_hidden_layers", c.num_layers},
                            {"num_attention_heads", c.num_heads},
                            {"num_key_value_heads", c.num_kv_heads},
                            {"vocab_size", c.vocab_size},
                            {"max_position_embeddings", c.max_position_embeddings},
                            {"tie_word_embeddings", c.tie_word_embeddings},
                            {"attention_bias", c.attention_bias}};
  return plan::model_spec_from_config(j, model);
}

// The variance indicator from a calibration file of this model's weights.
struct Indicator {
  std::vector<std::vector<double>> omega;  // [layer][width]
  std::vector<double> params;
  std::vector<LayerIndicator> layers;      // with each linear's share
  std::string sha256;
};

// The statistics the indicator reads must be finite, absmax and the mean of squares >= 0:
// NaN, Inf or negative values reached the solver as a non-finite objective and aborted it.
void check_input_statistics(const Checkpoint& ckpt, const CalibrationFile& calib, const std::string& file) {
  const ArchSpec& arch = arch_spec_for(ckpt.config().architecture);
  for (int64_t i = 0; i < ckpt.config().num_layers; ++i)
    for (const auto& spec : arch.linears) {
      const std::string name = layer_name(spec.pattern, i);
      const auto stats = calib.input_stats(name);
      if (!stats) continue;  // variance_indicator names the missing ones
      auto check = [&](std::span<const float> values, const char* what, bool non_negative) {
        for (size_t c = 0; c < values.size(); ++c)
          if (!std::isfinite(values[c]) || (non_negative && values[c] < 0))
            throw Error(file, name + " input " + what + " of channel " + std::to_string(c) + " is " +
                                  std::to_string(values[c]) + " (expected a finite number" +
                                  (non_negative ? " >= 0" : "") + "); rerun fsq calibrate on this model");
      };
      check(stats->absmax, "absmax", true);
      check(stats->mean, "mean", false);
      check(stats->sqmean, "mean of squares", true);
    }
}

Indicator indicator_from_calibration(const Flags& f) {
  Checkpoint ckpt = Checkpoint::open(f.model);
  CalibrationFile calib = CalibrationFile::open_for_model(f.calib, ckpt.weights_sha256(), "run fsq calibrate on this model");
  check_input_statistics(ckpt, calib, f.calib);
  Indicator ind;
  ind.sha256 = ckpt.weights_sha256();
  ind.layers = variance_indicator(ckpt, calib, f.bits, f.group_size);
  for (const auto& layer : ind.layers) {
    ind.omega.push_back(layer.omega);
    ind.params.push_back(layer.params);
  }
  // Finite statistics can still overflow (a mean of squares near the float limit): refused
  // here, naming the file, before the solver sees them.
  plan::check_omega(ind.omega, ind.params, f.bits, f.calib);
  return ind;
}

std::string indicator_source(const Flags& f) {
  return "variance indicator from " + f.calib + " (asymmetric g" + std::to_string(f.group_size) + " rounding steps)";
}

plan::BitAssignment assign_per_layer(const Flags& f, const Indicator& ind) {
  plan::BitAssignment a = plan::assign_bits(ind.omega, ind.params, f.bits, f.target_bits, f.time_limit);
  if (!a.found) throw Error("plan", "no assignment meets --target-bits (solver: " + a.status + ")");
  return a;
}

// --per-linear: every linear of every layer is an item of the knapsack. Returns the widths as
// plan.bits_per_linear holds them: per layer, role -> bits.
nlohmann::json assign_per_linear(const Flags& f, const Indicator& ind, plan::BitAssignment& a) {
  std::vector<std::vector<double>> omega;
  std::vector<double> params;
  for (const auto& layer : ind.layers)
    for (const auto& linear : layer.linears) {
      omega.push_back(linear.omega);
      params.push_back(linear.params);
    }
  a = plan::assign_bits(omega, params, f.bits, f.target_bits, f.time_limit);
  if (!a.found) throw Error("plan", "no assignment meets --target-bits (solver: " + a.status + ")");
  nlohmann::json widths = nlohmann::json::array();
  size_t item = 0;
  for (const auto& layer : ind.layers) {
    nlohmann::json roles = nlohmann::json::object();
    for (const auto& linear : layer.linears) roles[linear.role] = a.bits[item++];
    widths.push_back(roles);
  }
  return widths;
}

void print_per_linear(const nlohmann::json& widths, const std::vector<LayerIndicator>& layers) {
  std::printf("%-6s", "layer");
  for (const auto& linear : layers.front().linears) std::printf(" %9s", linear.role.c_str());
  std::printf("\n");
  for (size_t i = 0; i < layers.size(); ++i) {
    std::printf("%-6zu", i);
    for (const auto& linear : layers[i].linears) std::printf(" %9d", widths[i][linear.role].get<int>());
    std::printf("\n");
  }
}

// No devices: the widths per layer (or per linear) that minimize summed omega at --target-bits.
int run_bit_assignment(const Flags& f) {
  if (f.target_bits <= 0) throw Error("--target-bits", "without --cluster or --gpu, fsq plan assigns widths for a budget: give --target-bits B");
  Indicator ind = indicator_from_calibration(f);
  const plan::BitAssignment per_layer = assign_per_layer(f, ind);
  plan::BitAssignment a = per_layer;
  nlohmann::json linear_widths;
  if (f.per_linear) linear_widths = assign_per_linear(f, ind, a);
  nlohmann::json j;
  plan::ModelSpec spec = load_spec(f.model);
  j["kind"] = "bit assignment";
  j["model"] = {{"name", spec.name}, {"layers", spec.layers}, {"path", f.model}};
  j["model_sha256"] = ind.sha256;
  j["omega_source"] = indicator_source(f);
  j["widths"] = f.bits;
  j["group_size"] = f.group_size;
  j["target_bits"] = f.target_bits;
  j["granularity"] = f.per_linear ? "linear" : "layer";
  j["plan"] = {{"found", true}, {"status", a.status}, {"avg_bits", a.avg_bits}, {"sum_omega", a.omega},
               {"solve_seconds", a.seconds}};
  if (f.per_linear) {
    j["plan"]["bits_per_linear"] = linear_widths;
    j["per_layer_plan"] = {{"bits_per_layer", per_layer.bits}, {"avg_bits", per_layer.avg_bits}, {"sum_omega", per_layer.omega}};
  } else {
    j["plan"]["bits_per_layer"] = a.bits;
  }
  j["uniform"] = nlohmann::json::array();
  for (size_t w = 0; w < f.bits.size(); ++w) j["uniform"].push_back({{"bits", f.bits[w]}, {"sum_omega", plan::uniform_omega(ind.omega, w)}});
  j["omega_per_layer"] = ind.omega;
  if (f.per_linear) {
    j["omega_per_linear"] = nlohmann::json::array();
    for (const auto& layer : ind.layers) {
      nlohmann::json roles = nlohmann::json::object();
      for (const auto& linear : layer.linears) roles[linear.role] = linear.omega;
      j["omega_per_linear"].push_back(roles);
    }
  }
  if (!f.out.empty()) write_json_report(f.out, j);
  if (f.json_stdout) {
    j["invocation"] = invocation_json();
    std::fputs((j.dump(2) + "\n").c_str(), stdout);
    return 0;
  }
  std::printf("%s: %zu layers, widths at most %.2f bits on average (code bits), omega: %s\n", spec.name.c_str(),
              ind.layers.size(), f.target_bits, indicator_source(f).c_str());
  if (f.per_linear) {
    print_per_linear(linear_widths, ind.layers);
  } else {
    std::printf("bits per layer:");
    for (int b : a.bits) std::printf(" %d", b);
    std::printf("\n");
  }
  std::printf("plan: average %.3f bits, sum omega %.6g (%s, %.2f s)\n", a.avg_bits, a.omega, a.status.c_str(), a.seconds);
  if (f.per_linear)
    std::printf("per-layer plan at the same budget: average %.3f bits, sum omega %.6g\n", per_layer.avg_bits, per_layer.omega);
  for (size_t w = 0; w < f.bits.size(); ++w)
    std::printf("uniform %2d bits: sum omega %.6g\n", f.bits[w], plan::uniform_omega(ind.omega, w));
  if (!f.out.empty()) std::printf("wrote %s\n", f.out.c_str());
  return 0;
}

// --profile files: each measured on this model's shape with every width planned; a device
// type the GPU table lacks (a CPU profile) joins it with the measuring machine's memory.
std::vector<plan::LatencyProfile> load_profiles(const Flags& f, const plan::ModelSpec& model, plan::GpuSpecTable& gpus) {
  std::vector<plan::LatencyProfile> out;
  for (const auto& path : f.profiles) {
    plan::LatencyProfile p = plan::load_profile(path);
    plan::check_profile_fits(p, model, f.bits);
    if (plan::find_profile(&out, p.device))
      throw Error(path, "a second profile for device type " + p.device + " (give one per type)");
    gpus.add_if_unknown(plan::GpuSpec{p.device, p.memory_gib, 0, 0, 0});
    out.push_back(std::move(p));
  }
  return out;
}

void check_profiles_used(const std::vector<plan::LatencyProfile>& profiles, const plan::Cluster& cluster) {
  for (const auto& p : profiles) {
    bool used = false;
    for (const auto& d : cluster.devices) used = used || plan::find_profile(&profiles, d.spec.name) == &p;
    if (!used) throw Error(p.source, "is a profile of device type " + p.device + ", which the cluster does not have (" + cluster.describe() + ")");
  }
  for (const auto& d : cluster.devices)
    if (d.spec.fp16_tflops <= 0 && !plan::find_profile(&profiles, d.spec.name))
      throw Error("plan", "device type " + d.spec.name + " has no datasheet rates: give its fsq profile with --profile");
}

int run_plan(const Flags& f) {
  if (f.list_gpus || f.list_presets) return list(f);
  if (!f.calib.empty() && f.model.empty()) throw Error("--calib", "the indicator needs the weights: give --model DIR too");
  if (f.per_linear && !(f.cluster.empty() && f.gpu.empty()))
    throw Error("--per-linear", "cluster plans place whole layers; per-linear widths are for plans without --cluster/--gpu");
  if (f.per_linear && f.calib.empty()) throw Error("--per-linear", "needs the variance indicator: give --calib FILE");
  if (!f.profiles.empty() && f.cluster.empty() && f.gpu.empty())
    throw Error("--profile", "latencies matter to cluster plans: give --cluster FILE or --gpu TYPE");
  if (!f.calib.empty() && f.cluster.empty() && f.gpu.empty()) {
    plan::check_widths(f.bits, plan::assignable_widths());  // before any file is read
    if (!std::isfinite(f.target_bits)) throw Error("--target-bits", "expected a finite number of bits");
    check_output_file(f.out, "--out", {f.model, f.calib}, f.force);
    return run_bit_assignment(f);
  }
  if (f.model.empty() == f.preset.empty()) throw Error("plan", "give the model as --model DIR or --preset NAME (one of them)");
  if (f.cluster.empty() == f.gpu.empty()) throw Error("plan", "give the devices as --cluster FILE or --gpu TYPE (one of them)");
  if (f.prompt_len < 1 || f.new_tokens < 1 || f.batch < 1)
    throw Error("plan", "--prompt-len, --new-tokens and --batch must be at least 1");
  if (f.kv_bits != 4 && f.kv_bits != 8 && f.kv_bits != 16) throw Error("--kv-bits", "expected 4, 8 or 16");
  plan::check_widths(f.bits, {3, 4, 8, 16});  // the cost model's widths (make_plan checks again)
  if (!(std::isfinite(f.theta) && f.theta >= 0)) throw Error("--theta", "expected a finite number >= 0");
  if (std::isnan(f.max_omega) || std::isnan(f.target_bits)) throw Error("plan", "--max-omega and --target-bits must be numbers");
  if (!(f.memory_fraction > 0 && f.memory_fraction <= 1)) throw Error("--memory-fraction", "expected a value in (0, 1]");
  std::vector<std::filesystem::path> inputs = {f.model, f.cluster, f.gpu_specs, f.calib};
  inputs.insert(inputs.end(), f.profiles.begin(), f.profiles.end());
  check_output_file(f.out, "--out", inputs, f.force);

  plan::GpuSpecTable gpus = plan::GpuSpecTable::builtin();
  if (!f.gpu_specs.empty()) gpus.merge(plan::GpuSpecTable::load(f.gpu_specs));
  plan::PlanRequest r;
  r.model = f.preset.empty() ? load_spec(f.model) : plan::model_preset(f.preset);
  r.profiles = load_profiles(f, r.model, gpus);
  r.cluster = f.cluster.empty() ? plan::single_device_cluster(gpus.find(f.gpu, "--gpu")) : plan::load_cluster(f.cluster, gpus);
  check_profiles_used(r.profiles, r.cluster);
  r.workload.prompt_len = f.prompt_len;
  r.workload.new_tokens = f.new_tokens;
  r.workload.batch = f.batch;
  r.workload.kv_bits = f.kv_bits;
  r.options.widths = f.bits;
  r.options.theta = f.theta;
  if (f.max_omega >= 0) r.options.omega_cap = f.max_omega;
  if (f.quality_of > 0) r.options.budget_width = f.quality_of;
  if (f.target_bits > 0) r.options.avg_bits_cap = f.target_bits;
  r.options.solver = f.solver;
  r.options.time_limit_s = f.time_limit;
  r.options.group_size = f.group;
  r.options.memory_fraction = f.memory_fraction;
  std::string weights_sha256;
  if (f.calib.empty()) {
    r.layer_omega = plan::proxy_omega(r.model, f.bits);
    r.omega_source = "proxy (no calibration file: unit-variance weights, the same for every layer)";
  } else {
    Indicator ind = indicator_from_calibration(f);
    r.layer_omega = ind.omega;
    r.omega_source = indicator_source(f);
    weights_sha256 = ind.sha256;
  }

  plan::PlanReport report = plan::make_plan(r);
  nlohmann::json j = plan::plan_to_json(r, report);
  if (!weights_sha256.empty()) j["model_sha256"] = weights_sha256;  // fsq quantize --plan checks it
  if (!f.out.empty()) write_json_report(f.out, j);
  if (f.json_stdout) {
    j["invocation"] = invocation_json();
    std::fputs((j.dump(2) + "\n").c_str(), stdout);
  } else {
    std::fputs(plan::plan_table(r, report).c_str(), stdout);
    if (!f.out.empty()) std::printf("wrote %s\n", f.out.c_str());
  }
  return 0;
}

}  // namespace

Command add_plan_command(CLI::App& root) {
  auto f = std::make_shared<Flags>();
  CLI::App* app = root.add_subcommand(
      "plan",
      "Plan a model over a cluster of GPUs (LLM-PQ): device order, contiguous layers per device, bits per "
      "layer and micro-batch sizes that maximize predicted throughput for a batch of prompts, with memory "
      "checked per device. The ILP (COIN-OR CBC) runs on the best candidates of a fast local search. Prints "
      "the plan and its speedup over Uniform (even split, highest width that fits) and PipeEdge (one width, "
      "heterogeneity-aware split) in the same cost model (roofline from the GPU table, or a device type's measured "
      "latencies from fsq profile with --profile). With --calib and no devices, picks the width of each "
      "layer for an average-bits budget (--target-bits) from LLM-PQ's variance indicator, for fsq quantize --plan.");
  app->add_option("--model", f->model, "model folder, config.json or .gguf (llama, mistral, qwen2, opt, bloom)");
  app->add_option("--preset", f->preset, "a published model's shape instead of --model (see --list-presets)");
  app->add_option("--cluster", f->cluster, "cluster JSON: {\"devices\": [{\"type\", \"count\", \"node\"}], \"links\": {...}}")
      ->check(CLI::ExistingFile);
  app->add_option("--calib", f->calib,
                  "calibration file of --model (fsq calibrate): omega from its activation variances and the weights' "
                  "rounding steps; without --cluster/--gpu, assigns per-layer widths for --target-bits")
      ->check(CLI::ExistingFile);
  app->add_flag("--per-linear", f->per_linear,
                "with --calib and no devices: one width per linear (q_proj, ..., down_proj) instead of per layer, "
                "for fsq quantize --plan (rtn, awq, squeezellm); the per-layer plan's sum omega is printed beside it");
  app->add_option("--group-size", f->group_size, "quantization group size the indicator assumes for 3/4/8 bits")
      ->capture_default_str();
  app->add_option("--gpu", f->gpu, "a single device of this type instead of --cluster (see --list-gpus)");
  app->add_option("--gpu-specs", f->gpu_specs, "extra or replacement GPU types (JSON like lib/plan/gpu_specs.json)")
      ->check(CLI::ExistingFile);
  app->add_option("--prompt-len", f->prompt_len, "prompt tokens per sequence")->capture_default_str();
  app->add_option("--new-tokens", f->new_tokens, "generated tokens per sequence")->capture_default_str();
  app->add_option("--batch", f->batch, "sequences in the batch")->capture_default_str();
  app->add_option("--kv-bits", f->kv_bits, "KV cache width: 4, 8 or 16")->capture_default_str()->check(width_check());
  // Read by fsq::parse_width when the command runs (exit 1 with one line, like the planners' own
  // width checks), not converted by CLI11.
  app->add_option("--bits", f->bits_text, "weight widths to choose from, increasing (3, 4, 8, 16)")
      ->delimiter(',')
      ->capture_default_str();
  app->add_option("--theta", f->theta,
                  "seconds of latency one unit of summed omega is worth; 0 (default): keep the quality indicator no "
                  "worse than PipeEdge's plan and minimize latency")
      ->capture_default_str();
  // A budget given must be a finite number (NaN, a negative budget or -1 were taken as "no budget").
  auto budget = [](bool zero_ok) {
    return CLI::Validator(
        [zero_ok](std::string& text) -> std::string {
          double v = 0;
          try {
            size_t used = 0;
            v = std::stod(text, &used);
            if (used != text.size()) return "expected a number, got " + text;
          } catch (const std::exception&) {
            return "expected a number, got " + text;
          }
          if (!std::isfinite(v) || v < 0 || (!zero_ok && v == 0))
            return std::string("expected a finite number ") + (zero_ok ? ">= 0" : "> 0") + ", got " + text;
          return {};
        },
        "NUMBER", "budget");
  };
  app->add_option("--max-omega", f->max_omega, "quality budget: summed omega at most this")->check(budget(true));
  app->add_option("--quality-of", f->quality_of,
                  "quality budget: summed omega no worse than every layer at this width (e.g. 8: int8-equivalent)")
      ->check(width_check());
  app->add_option("--target-bits", f->target_bits, "average weight bits at most this")->check(budget(false));
  app->add_option("--solver", f->solver, "ilp or heuristic")->check(CLI::IsMember({"ilp", "heuristic"}))->capture_default_str();
  app->add_option("--time-limit", f->time_limit, "seconds per ILP solve")->check(CLI::PositiveNumber)->capture_default_str();
  app->add_option("--layers-per-group", f->group, "consecutive layers per ILP group (0: auto, at most 24 groups)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_option("--memory-fraction", f->memory_fraction, "share of each GPU's memory a plan may fill")->capture_default_str();
  app->add_option("--out", f->out, "write plan.json here (atomically)");
  app->add_option("--profile", f->profiles,
                  "measured latencies of one device type from fsq profile (repeatable, one per type): that type's layers "
                  "and head are timed from the profile's fit instead of the roofline; a type the GPU table lacks (cpu) "
                  "joins it with the profiled machine's memory")
      ->check(CLI::ExistingFile);
  app->add_flag("--json", f->json_stdout, "print the plan as JSON instead of the table");
  app->add_flag("--list-gpus", f->list_gpus, "list the known GPU types and exit");
  app->add_flag("--list-presets", f->list_presets, "list the model presets and exit");
  add_force_flag(app, f->force);
  app->footer(examples({"fsq plan --preset opt-30b --cluster cluster.json --prompt-len 512 --new-tokens 100 --batch 32",
                        "fsq plan --preset llama-2-70b --cluster cluster.json --quality-of 8",
                        "fsq plan --model models/llama --gpu A100-40G --out plan.json",
                        "fsq plan --model DIR --calib calib.safetensors --bits 3,4 --target-bits 3.5 --out plan.json",
                        "fsq plan --model DIR --calib calib.safetensors --bits 3,4,8 --target-bits 4 --per-linear --out plan.json",
                        "fsq profile --model DIR --out cpu.json && fsq plan --model DIR --gpu cpu --profile cpu.json",
                        "fsq plan --list-gpus"}));
  return Command{app, [f] {
    f->bits.clear();
    for (const std::string& text : f->bits_text) f->bits.push_back(parse_width(text, "--bits"));
    return run_plan(*f);
  }};
}

}  // namespace fsq::cli
