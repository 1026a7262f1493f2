// fsq quantize: runs a quantizer pass layer by layer and writes a packed checkpoint.
#include <cstdio>
#include <optional>
#include <string>

#include "common/byte_size.h"
#include "common/error.h"
#include "common/json_file.h"
#include "common/output_lock.h"
#include "formats/quant/quant_types.h"
#include "formats/quant/w8a8_quant.h"
#include "formats/shard_plan.h"
#include "interrupt.h"
#include "options.h"
#include "plan_file.h"
#include "width_option.h"
#include "provenance.h"
#include "quantize/head_quant.h"
#include "quantize/method.h"
#include "quantize/quantize_model.h"
#include "runtime/torch_bridge.h"

namespace fsq::cli {
namespace {

struct QuantizeFlags {
  std::string model, out, method = "awq", calib_data, calib_file, max_memory, max_shard_size = "5GB", json,
      progress = "auto", layer_inputs = "quantized", plan;
  int bits = 4;
  int head_bits = kDefaultHeadBits;
  int64_t group_size = 128;
  bool symmetric = false, dry_run = false, no_resume = false, force = false;
  WindowDraw draw;
  int64_t batch_size = 8, search_tokens = 8192;
  squeezellm::LutOptions lut;
  bool unweighted = false, gptq = false;
  std::string alpha = "0.5", act_quant = "per-token";
  bool weight_type_given = false;  // --bits, --group-size or --sym on the command line
  bool act_quant_given = false;    // --act-quant on the command line
  RuntimeFlags rt;
};

// --alpha: a number in [0, 1], or "auto" (nullopt: searched per linear group).
std::optional<double> parse_alpha(const std::string& text) {
  if (text == "auto") return std::nullopt;
  size_t used = 0;
  double a = -1;
  try {
    a = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(a >= 0 && a <= 1))
    throw Error("--alpha", "must be a number from 0 to 1, or auto", "0 .. 1 or auto", text);
  return a;
}

PassOptions pass_options(const QuantizeFlags& f) {
  PassOptions o;
  o.smooth_alpha = parse_alpha(f.alpha);
  o.gptq = f.gptq;
  if (!parse_activation_quant(f.act_quant, &o.act_quant))
    throw Error("--act-quant", "unknown activation quantization", "per-token, per-block or per-tensor", f.act_quant);
  const MethodNeeds& needs = find_quant_method(f.method).needs;
  if (needs.activations == ActivationRule::StaticOnly) {
    if (f.act_quant_given && o.act_quant != ActivationQuant::PerTensor)
      throw Error("--act-quant", "--method " + f.method + " quantizes activations statically: only per-tensor",
                  "per-tensor", f.act_quant);
    o.act_quant = ActivationQuant::PerTensor;
  }
  if (f.weight_type_given && needs.stores == StoredKind::W8A8)
    throw Error("--bits", "--method " + f.method + " always writes int8 weights per output channel (" +
                              w8a8_quant_name(o.act_quant) + "); drop --bits, --group-size and --sym");
  return o;
}

int run_quantize_command(const QuantizeFlags& f) {
  // One writer per --out and its .partial (common/output_lock.h), taken before any work.
  const OutputLock lock =
      f.dry_run ? OutputLock() : lock_output({f.out, "--out", OutputKind::Folder}, {f.model, f.calib_data, f.calib_file});
  check_output_file(f.json, "--json", {f.model, f.calib_data, f.calib_file, f.out, f.plan}, f.force);
  QuantizeConfig cfg;
  cfg.model = f.model;
  cfg.out = f.out;
  cfg.method = f.method;
  cfg.quant = UniformQuant{f.bits, f.group_size, f.symmetric};
  if (!f.plan.empty()) {
    PlanFile plan = read_plan_file(f.plan);
    cfg.layer_bits = std::move(plan.bits_per_layer);
    cfg.linear_bits = std::move(plan.bits_per_linear);
    cfg.layer_bits_model_sha256 = std::move(plan.model_sha256);
  }
  if (!f.calib_data.empty()) cfg.calib_data = f.calib_data;
  if (!f.calib_file.empty()) cfg.calib_file = f.calib_file;
  cfg.lut = f.lut;
  cfg.head_bits = f.head_bits;
  cfg.lut.weighted = !f.unweighted;
  cfg.pass_options = pass_options(f);
  cfg.draw = f.draw;
  cfg.batch_size = f.batch_size;
  cfg.quantized_inputs = f.layer_inputs == "quantized";
  cfg.search_tokens = f.search_tokens;
  cfg.runtime = runtime_options(f.rt);
  if (!f.max_memory.empty()) cfg.max_memory = parse_byte_size(f.max_memory, "--max-memory");
  cfg.max_shard_bytes = parse_shard_size(f.max_shard_size, "--max-shard-size");
  cfg.dry_run = f.dry_run;
  cfg.resume = !f.no_resume;
  apply_progress(f.progress);
  cfg.threads = apply_threads(f.rt.threads);
  cfg.producer = producer_json();
  if (!cfg.dry_run) set_interrupt_hint("rerun the same command to resume");

  QuantizeSummary summary = run_quantize(cfg, [](const std::string& line) {
    std::fputs(line.c_str(), stdout);
    if (!line.empty() && line.back() != '\n') std::fputc('\n', stdout);
    std::fflush(stdout);
  });
  if (!summary.dry_run)
    std::printf("wrote %s in %.1f s (%lld layers resumed), peak RSS %.1f MiB (predicted %.1f MiB, %.1f of it anonymous)\n",
                cfg.out.string().c_str(), summary.seconds, static_cast<long long>(summary.resumed_layers),
                static_cast<double>(summary.peak_rss_bytes) / (1024.0 * 1024.0),
                static_cast<double>(summary.plan.peak()) / (1024.0 * 1024.0),
                static_cast<double>(summary.plan.anonymous_peak()) / (1024.0 * 1024.0));
  if (!f.json.empty()) write_json_report(f.json, summary.to_json());
  return 0;
}

std::vector<std::string> method_names() {
  std::vector<std::string> names;
  for (const auto& m : quant_methods()) names.push_back(m.name);
  return names;
}

}  // namespace

Command add_quantize_command(CLI::App& root) {
  auto f = std::make_shared<QuantizeFlags>();
  std::string methods;
  for (const auto& m : quant_methods())
    methods += "\n  " + m.name + ": " + m.description + "\n      (" + describe_needs(m.needs) + ")";
  CLI::App* app = root.add_subcommand(
      "quantize",
      "Quantize every decoder linear layer of a checkpoint with a pass and write a packed checkpoint folder "
      "(FORMAT.md) that fsq eval runs. Streams the model one layer at a time; prints its plan (memory, output "
      "size) first; resumes an interrupted run from its last finished layer. Methods:" + methods);
  app->add_option("--model", f->model, "Hugging Face checkpoint folder")->required()->check(CLI::ExistingPath);
  app->add_option("--out", f->out, "packed checkpoint folder to create")->required();
  app->add_option("--method", f->method, "quantizer pass")->capture_default_str()->check(CLI::IsMember(method_names()));
  app->add_option("--bits", f->bits, "bits per weight")->capture_default_str()->check(width_check())->check(CLI::IsMember(supported_bits()));
  app->add_option("--group-size", f->group_size, "input columns per scale (0: one group per output channel)")
      ->capture_default_str()
      ->check(CLI::IsMember(supported_group_sizes()));
  app->add_flag("--sym", f->symmetric, "symmetric quantization (no zero points)");
  app->add_option("--head-bits", f->head_bits,
                  "token embedding and output head: 8 (w8g64s), 4 (w4g32a) or 16 (kept as in the source); on a small "
                  "model they are most of a decode step's bytes")
      ->capture_default_str()
      ->check(width_check())
      ->check(CLI::IsMember({4, 8, 16}));
  app->add_option("--plan", f->plan,
                  "mixed precision: the width of each layer (plan.bits_per_layer) or, from fsq plan --per-linear, of "
                  "each linear (plan.bits_per_linear) from fsq plan's plan.json instead of --bits; "
                  "rtn and awq take 2/3/4/8/16, squeezellm 3/4/8/16 (its 8-bit widths: rtn int8 groups of "
                  "--group-size, rounded by GPTQ with --gptq; 16: kept dense, fp16)")
      ->check(CLI::ExistingFile);
  app->add_option("--calib-data", f->calib_data,
                  "calibration text for awq, and for squeezellm's Fisher pass when no --calib is given: .txt, "
                  "folder of .txt, or .jsonl with \"text\"")
      ->check(CLI::ExistingPath);
  app->add_option("--calib", f->calib_file,
                  "squeezellm: calibration file with Fisher diagonals from fsq calibrate --fisher (without it, "
                  "quantize runs the Fisher pass on --calib-data first); smoothquant/w8a8 with a fixed --alpha: "
                  "the activation ranges from fsq calibrate instead of --calib-data")
      ->check(CLI::ExistingFile);
  app->add_option("--outlier-pct", f->lut.outlier_pct,
                  "squeezellm: percent of each row's values, the most extreme, kept exact in the sparse part")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 50.0));
  app->add_option("--sensitive-pct", f->lut.sensitive_pct,
                  "squeezellm: percent of the matrix's weights with the largest Fisher values kept exact")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 50.0));
  app->add_flag("--dense-only", f->lut.dense_only, "squeezellm: no sparse part (lookup tables only)");
  app->add_flag("--unweighted", f->unweighted, "squeezellm: plain k-means, every weight counts the same (ablation)");
  app->add_option("--alpha", f->alpha,
                  "smoothquant, intonly: migration strength 0..1 (s_j = max|X_j|^alpha / max|W_j|^(1-alpha)), or auto to "
                  "search 0.30..0.90 per linear group by W8A8 output error")
      ->capture_default_str();
  app->add_flag("--gptq", f->gptq,
                "weights by GPTQ (Frantar et al. 2023) instead of rounding to nearest: each input column's rounding "
                "error compensated in the columns after it, from the calibration inputs' X^T X (needs --calib-data). "
                "rtn, awq: after the pass (AWQ's scales folded first); smoothquant, w8a8, intonly: the int8 weights, "
                "on the smoothed inputs; squeezellm: the k-means centroids kept, the codes chosen by GPTQ");
  app->add_option("--act-quant", f->act_quant,
                  "smoothquant, w8a8: int8 activations per-token (dynamic scale per row), per-block (dynamic "
                  "scale per row and block of 32 columns, as llama.cpp's Q8_0 activations: an outlier channel "
                  "costs only its block; holds on text the calibration never saw) or per-tensor (static scale "
                  "from calibration); intonly: per-tensor only")
      ->capture_default_str()
      ->check(CLI::IsMember({"per-token", "per-block", "per-tensor"}));
  app->add_option("--samples", f->draw.samples, "calibration windows")->capture_default_str()->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app->add_option("--seq-len", f->draw.seq_len, "tokens per calibration window")->capture_default_str()->check(CLI::Range(int64_t{2}, int64_t{1} << 30));
  app->add_option("--seed", f->draw.seed, "seed of the calibration window positions")->capture_default_str();
  add_allow_overlap_flag(app, f->draw.allow_overlap);
  app->add_option("--batch-size", f->batch_size, "windows per forward call")->capture_default_str()->check(CLI::Range(int64_t{1}, int64_t{4096}));
  app->add_option("--layer-inputs", f->layer_inputs,
                  "activations that calibrate each layer: those of the already quantized layers before it, or "
                  "of the fp model (AutoAWQ)")
      ->capture_default_str()
      ->check(CLI::IsMember({"quantized", "fp"}));
  app->add_option("--search-tokens", f->search_tokens,
                  "calibration tokens each search step evaluates (awq: whole windows for attention, spread tokens "
                  "otherwise; 0: all)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app->add_option("--max-memory", f->max_memory, "refuse to start when the predicted anonymous memory exceeds this (e.g. 16G; default: the smallest of physical memory, RLIMIT_DATA and the cgroup's memory.max); mapped source pages are not counted, the kernel reclaims them");
  app->add_option("--max-shard-size", f->max_shard_size,
                  "largest safetensors shard of the output, as Hugging Face counts (5GB = 5e9 bytes; 500MB, "
                  "2GiB); a checkpoint that fits in one is a single model.safetensors")
      ->capture_default_str();
  app->add_flag("--dry-run", f->dry_run, "print the plan only");
  app->add_flag("--no-resume", f->no_resume, "discard saved layers of an interrupted run and start over");
  app->add_option("--json", f->json, "also write the plan, timings and per-layer choices as JSON");
  add_force_flag(app, f->force);
  add_progress_flag(app, f->progress);
  add_runtime_flags(app, f->rt);
  app->footer(examples({
      "fsq quantize --model models/stories260K --method rtn --bits 4 --group-size 32 --out q/rtn-w4g32",
      "fsq quantize --model DIR --method awq --bits 4 --group-size 128 --calib-data calib.jsonl --samples 128 --seq-len 512 --out q/awq-w4",
      "fsq quantize --model DIR --method awq --bits 4 --group-size 128 --gptq --calib-data calib.jsonl --out q/awq-gptq-w4",
      "fsq quantize --model DIR --method awq --calib-data calib.txt --out q/awq --dry-run",
      "fsq calibrate --model DIR --data calib.txt --fisher --out calib.safetensors && "
      "fsq quantize --model DIR --method squeezellm --bits 3 --calib calib.safetensors --out q/sq-w3",
      "fsq quantize --model DIR --method squeezellm --bits 4 --gptq --calib calib.safetensors --calib-data calib.txt --out q/sq-w4-gptq",
      "fsq quantize --model DIR --method awq --plan plan.json --calib-data calib.jsonl --out q/awq-mixed",
      "fsq quantize --model DIR --method smoothquant --alpha auto --calib-data calib.txt --out q/w8a8",
      "fsq quantize --model DIR --method smoothquant --alpha 0.7 --gptq --calib-data calib.txt --out q/w8a8-gptq",
      "fsq quantize --model DIR --method intonly --calib-data calib.txt --out q/intonly",
      "fsq eval --model q/awq-w4 --compare DIR --data wiki.test.raw"}));
  return Command{app, [f, app] {
    for (const char* name : {"--bits", "--group-size", "--sym"})
      if (app->get_option(name)->count() > 0) f->weight_type_given = true;
    f->act_quant_given = app->get_option("--act-quant")->count() > 0;
    return run_quantize_command(*f);
  }};
}

}  // namespace fsq::cli
