#include "quantize/quantize_model.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "calib/calibrate.h"
#include "calib/memory_plan.h"
#include "common/error.h"
#include "common/process.h"
#include "formats/checkpoint.h"
#include "formats/gguf/gguf_model.h"
#include "formats/packed_checkpoint.h"
#include "formats/quant/quant_types.h"
#include "quantize/assemble.h"
#include "quantize/layer_loop.h"
#include "quantize/quantize_inputs.h"
#include "quantize/squeezellm_layer.h"
#include "runtime/eval/speed.h"
#include "runtime/torch_bridge.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;

// Linears whose input width the requested group size does not divide get a fallback type.
std::string group_fallbacks(const Checkpoint& ckpt, const std::set<std::string>& linears, const UniformQuant& q) {
  std::map<std::string, int64_t> count;  // fallback type -> linears
  for (const std::string& name : linears) {
    const UniformQuant used = quant_for_columns(q, ckpt.get(name).shape[1]);
    if (used.group_size != q.group_size) count[uniform_quant_name(used)] += 1;
  }
  std::string out;
  for (const auto& [type, n] : count)
    out += "  note: " + std::to_string(n) + " linear(s) whose input width is not a multiple of " +
           std::to_string(q.group_size) + " use " + type + "\n";
  return out;
}

// Every option that changes the output bytes besides the source weights and the calibration
// windows (recorded separately): the resume fingerprint and fsq.json's run_options both come
// from here, so what a checkpoint says it was made with is what decided its bytes. Threads
// count: LibTorch's reductions split by thread, which moved the recorded AWQ losses (1 vs 2
// threads on stories260K) and can move a near-tie of the search.
nlohmann::json byte_changing_options(const QuantizeConfig& cfg, const QuantMethod& method) {
  nlohmann::json options = {{"method", cfg.method},
                            {"batch_size", cfg.batch_size},
                            {"compute_dtype", scalar_type_name(cfg.runtime.compute_dtype)},
                            {"device", c10::DeviceTypeName(cfg.runtime.device.type(), /*lower_case=*/true)},
                            {"threads", cfg.threads}};
  options.update(method.byte_options(cfg));
  if (!cfg.layer_bits.empty()) options["bits_per_layer"] = cfg.layer_bits;
  if (!cfg.linear_bits.empty()) options["bits_per_linear"] = cfg.linear_bits;
  options["head_bits"] = cfg.head_bits;
  return options;
}

// Bytes of the Fisher diagonals (F32, one per quantized weight) the pass maps.
int64_t fisher_bytes(const Checkpoint& ckpt, const std::set<std::string>& linear_names) {
  int64_t total = 0;
  for (const std::string& name : linear_names) total += ckpt.get(name).numel() * 4;
  return total;
}

// What the run will hold in memory and write, for its plan.
QuantizeShape quantize_shape(const QuantizeConfig& cfg, const QuantizeInputs& in, const Checkpoint& ckpt,
                             const std::set<std::string>& linear_names) {
  QuantizeShape shape{cfg.method, in.calibrate_here, in.quant, cfg.draw.samples, cfg.draw.seq_len, cfg.batch_size};
  shape.head_bits = cfg.head_bits;
  shape.searches = in.method->needs.searches;
  shape.gptq = in.gptq;
  if (in.method->needs.activations != ActivationRule::NotQuantized) shape.act_quant = cfg.pass_options.act_quant;
  if (!in.lut) return shape;
  shape.lut_bits = cfg.quant.bits;
  shape.sparse_fraction = cfg.lut.dense_only ? 0.0 : (cfg.lut.outlier_pct + cfg.lut.sensitive_pct) / 100.0;
  if (in.use_fisher) shape.fisher_file_bytes = fisher_bytes(ckpt, linear_names);
  if (in.fisher_pass) {
    CalibrationShape cs{cfg.draw.samples, cfg.draw.seq_len, cfg.batch_size,
                        static_cast<int64_t>(c10::elementSize(cfg.runtime.compute_dtype)), 0, true};
    for (const TensorView* v : ckpt.tensors()) cs.checkpoint_bytes += static_cast<int64_t>(v->nbytes);
    const CalibrationMemory fisher_pass = predict_calibration_memory(ckpt.config(), cs);
    shape.fisher_pass_bytes = fisher_pass.total() - fisher_pass.checkpoint;  // its anonymous part
  }
  return shape;
}

std::string gib_text(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

// Refuses, before any work, a run whose anonymous memory would not fit: --max-memory, or by
// default the smallest of physical memory, RLIMIT_DATA and the cgroup's memory.max. Mapped
// source pages are not counted: the kernel drops them under pressure.
void check_memory_limit(const QuantizePlan& plan, int64_t max_memory) {
  const MemoryLimit limit = max_memory > 0 ? MemoryLimit{max_memory, "--max-memory"} : anonymous_memory_limit();
  if (limit.bytes <= 0 || plan.anonymous_peak() <= limit.bytes) return;
  throw Error("--max-memory", "this run needs about " + gib_text(plan.anonymous_peak()) + " of anonymous memory (plus " +
                                  gib_text(plan.mapped_peak()) + " of mapped source pages), but " +
                                  gib_text(limit.bytes) + " is available (" + limit.source +
                                  "); use fewer --samples, a shorter --seq-len or a smaller --batch-size, or a "
                                  "machine (or --max-memory) with more");
}

}  // namespace

nlohmann::json QuantizeSummary::to_json() const {
  return {{"method", shape.method}, {"quant_type", shape.quant_name()}, {"dry_run", dry_run},
          {"plan", plan.to_json()}, {"resumed_layers", resumed_layers}, {"seconds", seconds},
          {"peak_rss_bytes", peak_rss_bytes},
          {"layers", layer_reports}};
}

QuantizeSummary run_quantize(const QuantizeConfig& cfg, const std::function<void(const std::string&)>& log) {
  auto t0 = std::chrono::steady_clock::now();
  if (is_gguf_path(cfg.model))
    throw Error("--model", "quantize reads Hugging Face checkpoint folders; convert the GGUF first: fsq convert --from gguf " +
                               cfg.model.string() + " --out DIR");
  const QuantizeInputs in = resolve_quantize_inputs(cfg);
  std::error_code ec;
  if (!cfg.dry_run && fs::exists(cfg.out, ec) && !(fs::is_directory(cfg.out, ec) && fs::is_empty(cfg.out, ec)))
    throw Error(cfg.out.string(), "already exists; choose a new --out folder");

  Checkpoint ckpt = Checkpoint::open(cfg.model);
  const ModelConfig& mc = ckpt.config();
  const ArchSpec& arch = arch_spec_for(mc.architecture);
  const std::set<std::string> linear_names = linear_weight_names(arch, mc.num_layers);
  const std::vector<LayerWidths> widths = layer_widths_for(cfg, in, ckpt);

  QuantizeSummary summary;
  summary.dry_run = cfg.dry_run;
  summary.shape = quantize_shape(cfg, in, ckpt, linear_names);
  std::optional<CalibrationFile> fisher;
  if (in.use_fisher && cfg.calib_file) fisher = open_fisher_calibration(*cfg.calib_file, ckpt);
  std::optional<CalibrationFile> activation_stats;
  if (in.stats_from_file)
    activation_stats = CalibrationFile::open_for_model(*cfg.calib_file, ckpt.weights_sha256(),
                                                       "run fsq calibrate on this model");
  summary.plan = plan_quantize(ckpt, summary.shape);
  const bool uniform_layers =
      !in.lut || std::any_of(widths.begin(), widths.end(), [&](const LayerWidths& w) { return any_width_is(w, 8); });
  log(summary.plan.to_text(summary.shape) + (uniform_layers ? group_fallbacks(ckpt, linear_names, in.quant) : ""));
  if (cfg.has_plan()) {
    const bool per_linear = !cfg.linear_bits.empty();
    log(std::string("quantize: ") + (per_linear ? "linear" : "layer") + " widths from --plan: " +
        count_widths(widths, per_linear) + " (the sizes above assume " + std::to_string(in.quant.bits) +
        " bits everywhere)");
  }
  check_memory_limit(summary.plan, cfg.max_memory);
  if (cfg.dry_run) return summary;

  // What calibrated the checkpoint, recorded in fsq.json (null for data-free methods).
  const bool lut_gptq = in.lut && in.gptq;
  nlohmann::json calibration;
  nlohmann::json windows;  // the calibration windows run through the layers
  at::Tensor ids;
  if (in.calibrate_here) ids = calibration_ids(cfg, windows);
  if (!lut_gptq) calibration = windows;
  if (activation_stats)
    calibration = {{"stats_file", activation_stats->path().string()}, {"provenance", activation_stats->provenance()}};
  if (fisher) calibration = {{"fisher_file", fisher->path().string()}, {"provenance", fisher->provenance()}};
  if (in.fisher_pass) {
    const CalibrationText text = read_calibration_text(*cfg.calib_data);
    calibration = {{"fisher_pass", {{"data", cfg.calib_data->string()}, {"data_sha256", text.sha256},
                                    {"samples", cfg.draw.samples}, {"seq_len", cfg.draw.seq_len},
                                    {"seed", cfg.draw.seed}}}};
  }
  if (lut_gptq) calibration["gptq_inputs"] = windows;

  const std::unique_ptr<QuantMethod> method = in.method->make(cfg.pass_options);
  method->set_name(in.method->name);
  const nlohmann::json run_options = byte_changing_options(cfg, *method);
  nlohmann::json fingerprint = run_options;
  fingerprint.update({{"source_sha256", ckpt.weights_sha256()}, {"calibration", calibration},
                      {"producer", cfg.producer}, {"format_version", kPackedFormatVersion}});
  std::string store_message;
  LayerStore store(cfg.out, fingerprint, cfg.resume, store_message);
  if (!store_message.empty()) log(store_message);
  if (in.fisher_pass) {
    const fs::path fisher_file = store.dir() / "fisher.safetensors";
    if (!fs::exists(fisher_file, ec)) {
      log("quantize: no --calib file given: running the Fisher pass on " + cfg.calib_data->string() +
          " first (as fsq calibrate --fisher would; kept for resuming in " + store.dir().string() + ")");
      run_fisher_pass(cfg, fisher_file);
    }
    fisher = open_fisher_calibration(fisher_file, ckpt);
    calibration["fisher_pass"]["provenance"] = fisher->provenance();
  }

  const LayerLoopInputs loop{cfg, in, ckpt, widths, ids, in.use_fisher ? &*fisher : nullptr,
                             activation_stats ? &*activation_stats : nullptr};
  summary.resumed_layers =
      run_layer_loop(loop, *method, store, "quantize: " + cfg.method + " " + summary.shape.quant_name());
  summary.layer_reports =
      assemble_checkpoint({cfg, ckpt, linear_names, calibration, run_options}, *method, store);
  store.remove();
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  summary.peak_rss_bytes = peak_rss_bytes();
  return summary;
}

}  // namespace fsq
