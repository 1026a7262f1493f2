#include "quantize/quantize_model.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <malloc.h>

#include "calib/calibrate.h"
#include "calib/layer_stream.h"
#include "calib/memory_plan.h"
#include "common/error.h"
#include "common/process.h"
#include "common/half.h"
#include "common/json_file.h"
#include "common/progress.h"
#include "formats/checkpoint.h"
#include "formats/gguf/gguf_model.h"
#include "formats/packed_checkpoint.h"
#include "formats/quant/quant_types.h"
#include "formats/tokenizer.h"
#include "quantize/fake_quant.h"
#include "quantize/gptq.h"
#include "quantize/gptq_group.h"
#include "quantize/head_quant.h"
#include "quantize/intonly_ranges.h"
#include "quantize/layer_inputs.h"
#include "quantize/layer_values.h"
#include "quantize/layer_store.h"
#include "quantize/pass.h"
#include "quantize/plan_widths.h"
#include "quantize/smoothquant.h"
#include "quantize/squeezellm_layer.h"
#include "runtime/eval/speed.h"
#include "runtime/torch_bridge.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;

const DenseLinear& dense(const DecoderLayer& layer, const std::string& role) {
  return dense_linear(layer, role, "quantize");
}

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

at::Tensor calibration_ids(const QuantizeConfig& cfg, nlohmann::json& provenance) {
  auto tokenizer = load_tokenizer(cfg.model);
  CalibrationText text = read_calibration_text(*cfg.calib_data);
  CalibrationSet set = make_calibration_set(*tokenizer, text, cfg.draw);
  if (!set.overlap_note.empty()) std::fprintf(stderr, "fsq: note: %s\n", set.overlap_note.c_str());
  provenance = {{"data", cfg.calib_data->string()}, {"data_sha256", text.sha256}, {"samples", cfg.draw.samples},
                {"seq_len", cfg.draw.seq_len}, {"seed", cfg.draw.seed}, {"bos", set.bos},
                {"tokenizer_sha256", tokenizer->sha256()}, {"window_starts", set.starts}};
  return window_ids(set);
}

// The linears ctx rounds to uniform types (PassContext::rounds), each in ctx.quant_for(role,
// its columns); `done`: linears the pass quantized itself (PassResult::quantized), stored as
// they are. Adds to `stored` their matrices and biases, and the layer's norms.
void quantize_layer(const DecoderLayer& layer, const ArchSpec& arch, const PassContext& ctx,
                    const std::map<std::string, GroupQuantized>& done, StoredLayer& stored) {
  for (const auto& spec : arch.linears) {
    if (!ctx.rounds(spec.role)) continue;
    const DenseLinear& d = dense(layer, spec.role);
    const UniformQuant used = ctx.quant_for(spec.role, d.in_features());
    const auto it = done.find(spec.role);
    stored.linears.emplace(spec.role, to_quantized_matrix(it != done.end() ? it->second
                                                                           : quantize_groups(d.weight().to(at::kFloat), used),
                                                          used));
    if (d.bias()) stored.vectors[spec.role + ".bias"] = to_floats(*d.bias());
  }
  stored.vectors["input_norm"] = to_floats(layer.input_norm);
  stored.vectors["post_attn_norm"] = to_floats(layer.post_attn_norm);
}

// StoredLayer::vectors key suffix of a linear kept at 16 bits (fsq quantize --plan): its
// weight rounded to fp16, row-major [out, in].
constexpr const char* kFp16WeightKey = ".weight";

// The linears of `layer` a plan keeps at 16 bits (all of them when `widths` is null): each
// weight rounded to fp16 (what the checkpoint will hold) and its bias, and the layer's norms.
void keep_fp16_linears(const DecoderLayer& layer, const ArchSpec& arch, const LayerWidths* widths, StoredLayer& stored) {
  for (const auto& spec : arch.linears) {
    if (widths && widths->at(spec.role) != 16) continue;
    const DenseLinear& d = dense(layer, spec.role);
    std::vector<float> w = to_floats(d.weight());
    for (float& x : w) x = f16_to_f32(f32_to_f16(x));
    stored.vectors[spec.role + kFp16WeightKey] = std::move(w);
    if (d.bias()) stored.vectors[spec.role + ".bias"] = to_floats(*d.bias());
    if (widths) stored.report[spec.role] = {{"bits", 16}};
  }
  stored.vectors["input_norm"] = to_floats(layer.input_norm);
  stored.vectors["post_attn_norm"] = to_floats(layer.post_attn_norm);
}

at::Tensor host_floats_like(std::vector<float> v, const std::vector<int64_t>& shape, const at::Tensor& like) {
  at::Tensor host = at::empty(shape, at::kFloat);
  std::memcpy(host.data_ptr<float>(), v.data(), v.size() * sizeof(float));
  return host.to(like.device(), like.scalar_type());
}

// `layer` as the packed checkpoint computes it: norms, biases and dequantized weights from
// `stored` (the same values whether the layer was just quantized or resumed from disk).
void use_stored_values(DecoderLayer& layer, const ArchSpec& arch, const StoredLayer& stored) {
  layer.input_norm = host_floats_like(stored.vectors.at("input_norm"), layer.input_norm.sizes().vec(), layer.input_norm);
  layer.post_attn_norm =
      host_floats_like(stored.vectors.at("post_attn_norm"), layer.post_attn_norm.sizes().vec(), layer.post_attn_norm);
  for (const auto& spec : arch.linears) {
    const DenseLinear& d = dense(layer, spec.role);
    std::vector<float> w(static_cast<size_t>(d.out_features() * d.in_features()));
    if (auto lut = stored.lut_linears.find(spec.role); lut != stored.lut_linears.end())
      dequantize_lut(lut->second, w.data());
    else if (auto fp16 = stored.vectors.find(spec.role + kFp16WeightKey); fp16 != stored.vectors.end())
      w = fp16->second;
    else
      dequantize_uniform(stored.linears.at(spec.role), w.data());
    std::optional<at::Tensor> bias;
    if (d.bias()) bias = host_floats_like(stored.vectors.at(spec.role + ".bias"), d.bias()->sizes().vec(), *d.bias());
    layer.linear(spec.role) = std::make_unique<DenseLinear>(
        host_floats_like(std::move(w), {d.out_features(), d.in_features()}, d.weight()), std::move(bias));
  }
}

// Floats stored in the dtype the source used for that tensor.
std::vector<std::byte> encode(const std::vector<float>& v, DType dtype, const std::string& name) {
  std::vector<std::byte> out;
  if (dtype == DType::F32) {
    out.resize(v.size() * 4);
    std::memcpy(out.data(), v.data(), out.size());
    return out;
  }
  if (dtype != DType::BF16 && dtype != DType::F16) throw Error(name, "unsupported source dtype for a rewritten tensor");
  out.resize(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t h = dtype == DType::BF16 ? f32_to_bf16(v[i]) : f32_to_f16(v[i]);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

// Every option that changes the output bytes besides the source weights and the calibration
// windows (recorded separately): the resume fingerprint and fsq.json's run_options both come
// from here, so what a checkpoint says it was made with is what decided its bytes. Threads
// count: LibTorch's reductions split by thread, which moved the recorded AWQ losses (1 vs 2
// threads on stories260K) and can move a near-tie of the search.
nlohmann::json byte_changing_options(const QuantizeConfig& cfg, bool lookup_table, bool int8_activations) {
  nlohmann::json options = {{"method", cfg.method},
                            {"batch_size", cfg.batch_size},
                            {"compute_dtype", scalar_type_name(cfg.runtime.compute_dtype)},
                            {"device", c10::DeviceTypeName(cfg.runtime.device.type(), /*lower_case=*/true)},
                            {"threads", cfg.threads}};
  if (lookup_table) {
    options.update({{"quant_type", lut_quant_name(cfg.quant.bits)},
                    {"bits", cfg.quant.bits},
                    {"outlier_pct", cfg.lut.outlier_pct},
                    {"sensitive_pct", cfg.lut.sensitive_pct},
                    {"dense_only", cfg.lut.dense_only},
                    {"weighted", cfg.lut.weighted},
                    {"max_iterations", cfg.lut.max_iterations},
                    {"tolerance", cfg.lut.tolerance}});
    if (cfg.pass_options.gptq)
      options.update({{"weights", "gptq"}, {"layer_inputs", cfg.quantized_inputs ? "quantized" : "fp"}});
  } else if (int8_activations) {
    const PassOptions& p = cfg.pass_options;
    options.update({{"quant_type", w8a8_quant_name(p.act_quant)},
                    {"act_quant", activation_quant_label(p.act_quant)},
                    {"layer_inputs", cfg.quantized_inputs ? "quantized" : "fp"},
                    {"search_tokens", cfg.search_tokens}});
    if (p.gptq) options["weights"] = "gptq";  // absent: round to nearest
    if (cfg.method == "smoothquant" || cfg.method == "intonly")
      options["alpha"] = p.smooth_alpha ? nlohmann::json(*p.smooth_alpha) : nlohmann::json("auto");
  } else {
    options.update({{"quant_type", uniform_quant_name(cfg.quant)},
                    {"bits", cfg.quant.bits},
                    {"group_size", cfg.quant.group_size},
                    {"symmetric", cfg.quant.symmetric},
                    {"layer_inputs", cfg.quantized_inputs ? "quantized" : "fp"},
                    {"search_tokens", cfg.search_tokens}});
    if (cfg.pass_options.gptq) options["weights"] = "gptq";
  }
  if (!cfg.layer_bits.empty()) options["bits_per_layer"] = cfg.layer_bits;
  if (!cfg.linear_bits.empty()) options["bits_per_linear"] = cfg.linear_bits;
  options["head_bits"] = cfg.head_bits;
  return options;
}

// Widths a LUT (squeezellm) plan stores as round-to-nearest int8 groups: SqueezeLLM's
// tables pay off at 3 and 4 bits; at 8, uniform int8 is as exact and runs the int8 kernels.
bool lut_plan_int8(bool lut, int bits) { return lut && bits == 8; }

// PassContext::role_bits for one layer of a plan: the widths the pass rounds to uniform types,
// 0 for the linears stored otherwise (16 bits; LUT widths in a squeezellm plan).
std::map<std::string, int> uniform_role_bits(const LayerWidths& widths, bool lut) {
  std::map<std::string, int> out;
  for (const auto& [role, bits] : widths)
    out[role] = bits == 16 || (lut && !lut_plan_int8(lut, bits)) ? 0 : bits;
  return out;
}

// StoredLayer::vectors key suffix of a linear's largest calibration |input| (W8A8 passes).
constexpr const char* kInputAbsmaxKey = ".input_absmax";
// StoredLayer::vectors key of the integer-only ranges ([kIntonlyRangeCount], IntonlyRange order).
constexpr const char* kIntonlyRangesKey = "intonly_ranges";

// A W8A8 linear: its activation quantization and, static, the scale from calibration.
void set_activation_quant(QuantizedLinearToWrite& linear, ActivationQuant mode, const StoredLayer& stored,
                          const std::string& role) {
  linear.act_quant = mode;
  if (mode != ActivationQuant::PerTensor) return;
  const auto it = stored.vectors.find(role + kInputAbsmaxKey);
  if (it == stored.vectors.end() || it->second.size() != 1)
    throw Error(linear.name, "the pass recorded no input range for a static activation scale");
  linear.input_scale = static_activation_scale(it->second[0]);
}

// SqueezeLLM needs Fisher diagonals unless it runs unweighted without the sensitive part.
bool lut_needs_fisher(const squeezellm::LutOptions& o) {
  return o.weighted || (!o.dense_only && o.sensitive_pct > 0);
}

// Bytes of the Fisher diagonals (F32, one per quantized weight) the pass maps.
int64_t fisher_bytes(const Checkpoint& ckpt, const std::set<std::string>& linear_names) {
  int64_t total = 0;
  for (const std::string& name : linear_names) total += ckpt.get(name).numel() * 4;
  return total;
}

// Runs `fsq calibrate --fisher` on the quantize options into `path` (inside the partial
// folder, so an interrupted run resumes without repeating it).
void run_fisher_pass(const QuantizeConfig& cfg, const std::filesystem::path& path) {
  CalibrateConfig c;
  c.model = cfg.model;
  c.data = *cfg.calib_data;
  c.out = path;
  c.draw = cfg.draw;
  c.fisher = true;
  c.batch_size = cfg.batch_size;
  c.runtime = cfg.runtime;
  c.threads = cfg.threads;
  c.tool_version = cfg.producer.is_object() ? cfg.producer.value("version", "") : "";
  run_calibration(c);
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
  const PassInfo& pass_info = find_quant_pass(cfg.method);
  const bool int8_activations = pass_info.int8_activations;
  // The weights' type: SmoothQuant's are always int8 per channel, whatever --bits says.
  const UniformQuant quant = int8_activations ? kW8A8Weights : cfg.quant;
  validate_uniform_quant(quant, "--bits/--group-size");
  if (int8_activations && cfg.pass_options.act_quant == ActivationQuant::None)
    throw Error("--act-quant", "--method " + cfg.method + " quantizes activations: use per-token or per-tensor");
  if (pass_info.integer_only && cfg.pass_options.act_quant != ActivationQuant::PerTensor)
    throw Error("--act-quant", "--method " + cfg.method + " needs static activation scales: use per-tensor");
  // W8A8 passes with a fixed alpha can take their activation ranges from a calibration
  // file (fsq calibrate) instead of running calibration windows here; the integer-only
  // pass measures its ranges on calibration windows, so it always runs them.
  if (pass_info.integer_only && cfg.calib_file)
    throw Error("--calib", "--method " + cfg.method + " measures its ranges on calibration windows; give --calib-data TEXT");
  const bool stats_from_file = int8_activations && cfg.calib_file.has_value();
  if (stats_from_file && !cfg.pass_options.smooth_alpha && cfg.method == "smoothquant")
    throw Error("--alpha", "auto searches on calibration activations, which a --calib file does not hold; give "
                           "--calib-data TEXT instead, or a fixed --alpha");
  const bool lut = pass_info.lookup_table;
  if (cfg.pass_options.gptq && (stats_from_file || !cfg.calib_data))
    throw Error("--gptq", std::string("needs calibration inputs") + (stats_from_file ? ", which a --calib file does not hold" : "") +
                              ": give --calib-data TEXT" +
                              (lut ? " (the Fisher diagonals may still come from --calib)" : stats_from_file ? " instead" : ""));
  // GPTQ for rtn, awq and squeezellm: the pipeline runs it on the layer as the pass left it,
  // so those methods run calibration windows (squeezellm besides its Fisher pass).
  const bool pipeline_gptq = cfg.pass_options.gptq && !int8_activations;
  const bool lut_gptq = lut && cfg.pass_options.gptq;
  const bool calibrate_here = (pass_info.needs_calibration || pipeline_gptq) && !stats_from_file;
  if (calibrate_here && !cfg.calib_data)
    throw Error("--calib-data", "--method " + cfg.method + " needs calibration text (a .txt, folder or .jsonl)" +
                                    (int8_activations ? " or a calibration file (--calib, from fsq calibrate)" : ""));
  const bool use_fisher = lut && lut_needs_fisher(cfg.lut);
  if (lut && !lut_bits_supported(cfg.quant.bits))
    throw Error("--bits", "--method " + cfg.method + " stores 3- or 4-bit codes", "3 or 4", std::to_string(cfg.quant.bits));
  if (cfg.calib_file && !lut && !int8_activations)
    throw Error("--calib", "only --method squeezellm, smoothquant and w8a8 read a calibration file; --method " +
                               cfg.method + " calibrates on --calib-data text");
  if (use_fisher && !cfg.calib_file && !cfg.calib_data)
    throw Error("--calib", "--method " + cfg.method +
                               " needs Fisher diagonals: give --calib FILE (from fsq calibrate --fisher) or "
                               "--calib-data TEXT to run the Fisher pass here (or --unweighted --sensitive-pct 0)");
  const bool fisher_pass = use_fisher && !cfg.calib_file;
  std::error_code ec;
  if (!cfg.dry_run && fs::exists(cfg.out, ec) && !(fs::is_directory(cfg.out, ec) && fs::is_empty(cfg.out, ec)))
    throw Error(cfg.out.string(), "already exists; choose a new --out folder");

  Checkpoint ckpt = Checkpoint::open(cfg.model);
  const ModelConfig& mc = ckpt.config();
  const ArchSpec& arch = arch_spec_for(mc.architecture);
  const std::set<std::string> linear_names = linear_weight_names(arch, mc.num_layers);
  if ((calibrate_here || fisher_pass) && cfg.draw.seq_len > mc.max_position_embeddings)
    throw Error("--seq-len", "exceeds the model's maximum positions",
                "<= " + std::to_string(mc.max_position_embeddings), std::to_string(cfg.draw.seq_len));

  const bool has_plan = !cfg.layer_bits.empty() || !cfg.linear_bits.empty();
  if (has_plan && int8_activations)
    throw Error("--plan", "--method " + cfg.method + " has one width (int8); mixed plans need rtn, awq or squeezellm");
  const std::vector<LayerWidths> planned =
      expand_plan_widths(cfg.layer_bits, cfg.linear_bits, arch, mc.num_layers, cfg.method, lut);
  if (!cfg.layer_bits_model_sha256.empty() && cfg.layer_bits_model_sha256 != ckpt.weights_sha256())
    throw Error("--plan", "was made for other weights (model sha256 " + cfg.layer_bits_model_sha256.substr(0, 12) +
                              "..., --model has " + ckpt.weights_sha256().substr(0, 12) + "...)");
  // Layer i's width per linear: the plan's, else quant.bits everywhere.
  LayerWidths unplanned;
  for (const auto& spec : arch.linears) unplanned[spec.role] = quant.bits;
  auto widths_of = [&](int64_t i) -> const LayerWidths& { return planned.empty() ? unplanned : planned[i]; };

  QuantizeSummary summary;
  summary.dry_run = cfg.dry_run;
  summary.shape = {cfg.method, calibrate_here, quant, cfg.draw.samples, cfg.draw.seq_len, cfg.batch_size};
  summary.shape.head_bits = cfg.head_bits;
  summary.shape.searches = pass_info.needs_calibration;
  if (int8_activations) summary.shape.act_quant = cfg.pass_options.act_quant;
  std::optional<CalibrationFile> fisher;
  if (use_fisher && cfg.calib_file) fisher = open_fisher_calibration(*cfg.calib_file, ckpt);
  std::optional<CalibrationFile> activation_stats;
  if (stats_from_file)
    activation_stats = CalibrationFile::open_for_model(*cfg.calib_file, ckpt.weights_sha256(),
                                                       "run fsq calibrate on this model");
  if (lut) {
    summary.shape.lut_bits = cfg.quant.bits;
    summary.shape.sparse_fraction = cfg.lut.dense_only ? 0.0 : (cfg.lut.outlier_pct + cfg.lut.sensitive_pct) / 100.0;
    if (use_fisher) summary.shape.fisher_file_bytes = fisher_bytes(ckpt, linear_names);
    if (fisher_pass) {
      CalibrationShape cs{cfg.draw.samples, cfg.draw.seq_len, cfg.batch_size,
                          static_cast<int64_t>(c10::elementSize(cfg.runtime.compute_dtype)), 0, true};
      for (const TensorView* v : ckpt.tensors()) cs.checkpoint_bytes += static_cast<int64_t>(v->nbytes);
      summary.shape.fisher_pass_bytes = predict_calibration_memory(mc, cs).total();
    }
  }
  summary.plan = plan_quantize(ckpt, summary.shape);
  const bool uniform_layers = !lut || std::any_of(planned.begin(), planned.end(),
                                                   [&](const LayerWidths& w) { return any_width_is(w, 8); });
  log(summary.plan.to_text(summary.shape) + (uniform_layers ? group_fallbacks(ckpt, linear_names, quant) : ""));
  if (has_plan) {
    const bool per_linear = !cfg.linear_bits.empty();
    log(std::string("quantize: ") + (per_linear ? "linear" : "layer") + " widths from --plan: " +
        count_widths(planned, per_linear) + " (the sizes above assume " + std::to_string(quant.bits) + " bits everywhere)");
  }
  const int64_t limit = cfg.max_memory > 0 ? cfg.max_memory : physical_memory_bytes();
  if (limit > 0 && summary.plan.peak() > limit)
    throw Error("--max-memory", "the predicted peak memory exceeds the limit; use fewer --samples, a shorter --seq-len "
                                "or a smaller --batch-size, or raise --max-memory",
                "<= " + std::to_string(limit) + " bytes", std::to_string(summary.plan.peak()) + " bytes");
  if (cfg.dry_run) return summary;

  nlohmann::json calibration;  // null for data-free methods
  nlohmann::json windows;      // the calibration windows run through the layers
  at::Tensor ids;
  if (calibrate_here) ids = calibration_ids(cfg, windows);
  if (!lut_gptq) calibration = windows;
  if (activation_stats)
    calibration = {{"stats_file", activation_stats->path().string()}, {"provenance", activation_stats->provenance()}};

  if (fisher) calibration = {{"fisher_file", fisher->path().string()}, {"provenance", fisher->provenance()}};
  if (fisher_pass) {
    const CalibrationText text = read_calibration_text(*cfg.calib_data);
    calibration = {{"fisher_pass", {{"data", cfg.calib_data->string()}, {"data_sha256", text.sha256},
                                    {"samples", cfg.draw.samples}, {"seq_len", cfg.draw.seq_len},
                                    {"seed", cfg.draw.seed}}}};
  }
  if (lut_gptq) calibration["gptq_inputs"] = windows;

  const nlohmann::json run_options = byte_changing_options(cfg, lut, int8_activations);
  nlohmann::json fingerprint = run_options;
  fingerprint.update({{"source_sha256", ckpt.weights_sha256()}, {"calibration", calibration},
                      {"producer", cfg.producer}, {"format_version", kPackedFormatVersion}});
  std::string store_message;
  LayerStore store(cfg.out, fingerprint, cfg.resume, store_message);
  if (!store_message.empty()) log(store_message);
  if (fisher_pass) {
    const fs::path fisher_file = store.dir() / "fisher.safetensors";
    if (!fs::exists(fisher_file, ec)) {
      log("quantize: no --calib file given: running the Fisher pass on " + cfg.calib_data->string() +
          " first (as fsq calibrate --fisher would; kept for resuming in " + store.dir().string() + ")");
      run_fisher_pass(cfg, fisher_file);
    }
    fisher = open_fisher_calibration(fisher_file, ckpt);
    calibration["fisher_pass"]["provenance"] = fisher->provenance();
  }
  squeezellm::LutOptions lut_options = cfg.lut;
  lut_options.bits = cfg.quant.bits;
  const CalibrationFile* fisher_source = use_fisher ? &*fisher : nullptr;

  // A uniform pass's context for layer i: quant at the width the layer's rounded linears
  // share (per-layer plans), role_bits for per-linear ones.
  auto context_of = [&](int64_t i, const RopeTables& rope) {
    PassContext ctx{mc, arch, rope, i, quant, cfg.batch_size, cfg.search_tokens};
    if (activation_stats) ctx.activation_stats = &*activation_stats;
    if (has_plan) {
      ctx.role_bits = uniform_role_bits(widths_of(i), lut);
      for (const auto& [role, bits] : ctx.role_bits)
        if (bits != 0) ctx.quant.bits = bits;
    }
    return ctx;
  };

  auto shell = LlamaModel::load(ckpt, cfg.runtime, /*with_layers=*/false);
  // Calibration windows run at positions [0, seq_len); data-free passes run no forward.
  const RopeTables rope = shell->rope(calibrate_here ? cfg.draw.seq_len : 0);
  const auto pass = pass_info.make(cfg.pass_options);
  at::Tensor hidden;
  if (calibrate_here) {
    at::NoGradGuard no_grad;
    std::vector<at::Tensor> parts;
    for (int64_t b = 0; b < ids.size(0); b += cfg.batch_size)
      parts.push_back(shell->embed(ids.narrow(0, b, std::min(cfg.batch_size, ids.size(0) - b))));
    hidden = at::cat(parts, 0);
  }
  auto later_layers_pending = [&](int64_t i) {
    for (int64_t j = i + 1; j < mc.num_layers; ++j)
      if (!store.has(j)) return true;
    return false;
  };

  int64_t quantized_now = 0;
  auto count_saved_layer = [&] {
    if (cfg.stop_after_layers >= 0 && ++quantized_now >= cfg.stop_after_layers)
      throw Error("quantize", "stopped after " + std::to_string(quantized_now) + " layers (testing hook)");
  };
  {
    Progress bar("quantize: " + cfg.method + " " + summary.shape.quant_name(), mc.num_layers);
    for (int64_t i = 0; i < mc.num_layers; ++i) {
      if (store.has(i)) {
        summary.resumed_layers += 1;
        if (calibrate_here && later_layers_pending(i)) {
          DecoderLayer saved = shell->load_layer(ckpt, i);
          if (cfg.quantized_inputs) use_stored_values(saved, arch, store.load(i));
          hidden = run_fp_layer(saved, hidden, rope, mc, i, cfg.batch_size, false).output;
        }
        bar.update(i + 1, "layer " + std::to_string(i) + " (saved)");
        continue;
      }
      DecoderLayer layer = shell->load_layer(ckpt, i);
      const LayerWidths& widths = widths_of(i);
      if (all_widths_are(widths, 16)) {
        StoredLayer stored;
        stored.report = {{"bits", 16}};
        keep_fp16_linears(layer, arch, nullptr, stored);
        store.save(i, stored);
        count_saved_layer();
        if (calibrate_here && later_layers_pending(i)) {
          use_stored_values(layer, arch, stored);
          hidden = run_fp_layer(layer, hidden, rope, mc, i, cfg.batch_size, false).output;
        }
        malloc_trim(0);
        bar.update(i + 1, "layer " + std::to_string(i) + " (16-bit)");
        continue;
      }
      LayerRun run;
      if (calibrate_here) run = run_fp_layer(layer, hidden, rope, mc, i, cfg.batch_size, true);
      StoredLayer stored;
      const PassContext ctx = context_of(i, rope);
      if (lut) {
        // LUT widths first; then a plan's 8-bit linears, as `--method rtn` rounds them (by GPTQ
        // with --gptq, on the inputs the lookup-table linears use; rtn leaves the layer as it
        // was).
        stored = quantize_layer_lut(layer, arch, i, fisher_source, lut_options, lut_gptq ? &run.acts : nullptr,
                                    has_plan ? &widths : nullptr);
        if (any_width_is(widths, 8)) {
          PassResult result = find_quant_pass("rtn").make(cfg.pass_options)->run(layer, run.acts, ctx);
          if (lut_gptq)
            for (const LinearGroup& group : arch.groups)
              quantize_group_gptq(layer, ctx, group, gptq_hessian(run.acts.groups.at(group.name)), result);
          stored.report.update(result.report);
          quantize_layer(layer, arch, ctx, result.quantized, stored);
        }
      } else {
        PassResult result = pass->run(layer, run.acts, ctx);
        if (pipeline_gptq) {
          // The inputs of the layer as the pass left it: AWQ's folds rescale them; a pass that
          // calibrates nothing (rtn) left the layer as it was.
          LayerRun folded;
          if (pass_info.needs_calibration) folded = run_fp_layer(layer, hidden, rope, mc, i, cfg.batch_size, true);
          const LayerActivations& inputs = pass_info.needs_calibration ? folded.acts : run.acts;
          for (const LinearGroup& group : arch.groups)
            quantize_group_gptq(layer, ctx, group, gptq_hessian(inputs.groups.at(group.name)), result);
        }
        stored.report = result.report;
        quantize_layer(layer, arch, ctx, result.quantized, stored);
        for (const auto& [role, absmax] : result.input_absmax) stored.vectors[role + kInputAbsmaxKey] = {absmax};
      }
      if (any_width_is(widths, 16)) keep_fp16_linears(layer, arch, &widths, stored);
      at::Tensor next;  // the next layer's input, when the range run computed it
      if (pass_info.integer_only) {
        // The ranges of the layer as stored, on the inputs it sees; with quantized_inputs that
        // run's output also feeds the next layer.
        use_stored_values(layer, arch, stored);
        IntonlyRangeRun ranges = measure_intonly_ranges(layer, hidden, rope, mc, i, cfg.batch_size);
        stored.vectors[kIntonlyRangesKey] = ranges.ranges;
        stored.report["intonly_ranges"] = ranges.ranges;
        if (cfg.quantized_inputs) next = ranges.output;
      }
      store.save(i, stored);
      count_saved_layer();
      if (next.defined()) {
        hidden = next;
      } else if (calibrate_here && cfg.quantized_inputs && later_layers_pending(i)) {
        use_stored_values(layer, arch, stored);
        hidden = run_fp_layer(layer, hidden, rope, mc, i, cfg.batch_size, false).output;
      } else if (calibrate_here) {
        hidden = run.output;
      }
      malloc_trim(0);
      bar.update(i + 1, "layer " + std::to_string(i));
    }
    bar.finish();
  }

  // Assemble from the saved layers (so a resumed run writes the same bytes).
  PackedCheckpointToWrite packed;
  const fs::path config_file = cfg.model / "config.json";
  packed.source_config = read_json_file(config_file);
  packed.calibration = calibration;
  packed.run_options = run_options;
  packed.producer = cfg.producer;
  packed.source_sha256 = ckpt.weights_sha256();
  packed.tokenizer_dir = cfg.model;
  std::deque<std::vector<std::byte>> rewritten;  // storage for norms and biases
  std::set<std::string> from_layers;
  for (int64_t i = 0; i < mc.num_layers; ++i) {
    StoredLayer stored = store.load(i);
    summary.layer_reports.push_back({{"layer", i}, {"report", stored.report}});
    auto add_vector = [&](const std::string& name, const std::vector<float>& v) {
      const TensorView& original = ckpt.get(name);
      rewritten.push_back(encode(v, original.dtype, name));
      packed.dense.push_back({name, original.dtype, original.shape, rewritten.back()});
      from_layers.insert(name);
    };
    add_vector(layer_name(arch.input_norm.hf, i), stored.vectors.at("input_norm"));
    add_vector(layer_name(arch.post_attn_norm.hf, i), stored.vectors.at("post_attn_norm"));
    if (auto r = stored.vectors.find(kIntonlyRangesKey); r != stored.vectors.end()) {
      const std::string name = layer_name(arch.layer_prefix + kIntonlyRangesSuffix, i);
      rewritten.push_back(encode(r->second, DType::F32, name));
      packed.dense.push_back({name, DType::F32, {static_cast<int64_t>(r->second.size())}, rewritten.back()});
    }
    const nlohmann::json options = {{"report", stored.report}};
    auto add_bias = [&](const std::string& role, const std::string& base) {
      if (auto b = stored.vectors.find(role + ".bias"); b != stored.vectors.end()) add_vector(base + ".bias", b->second);
    };
    for (auto& [role, matrix] : stored.linears) {
      const std::string base = layer_name(arch.linear(role).pattern, i);
      add_bias(role, base);
      // In a squeezellm plan the uniform layers are its 8-bit ones, round-to-nearest.
      QuantizedLinearToWrite linear{base, std::move(matrix), lut ? "rtn" : cfg.method, options, std::nullopt};
      if (int8_activations) set_activation_quant(linear, cfg.pass_options.act_quant, stored, role);
      packed.linears.push_back(std::move(linear));
    }
    for (const auto& spec : arch.linears) {
      auto fp16 = stored.vectors.find(spec.role + kFp16WeightKey);
      if (fp16 == stored.vectors.end()) continue;
      const std::string base = layer_name(spec.pattern, i);
      add_bias(spec.role, base);
      const TensorView& original = ckpt.get(base + ".weight");
      rewritten.push_back(encode(fp16->second, DType::F16, base + ".weight"));
      packed.dense.push_back({base + ".weight", DType::F16, original.shape, rewritten.back()});
    }
    for (auto& [role, matrix] : stored.lut_linears) {
      const std::string base = layer_name(arch.linear(role).pattern, i);
      add_bias(role, base);
      packed.linears.push_back({base, QuantizedMatrix{}, cfg.method, options, std::move(matrix)});
    }
  }
  const std::optional<UniformQuant> head_quant = head_quant_for_bits(cfg.head_bits);
  const std::set<std::string> head = head_quant ? head_weight_names(arch, ckpt) : std::set<std::string>{};
  for (const TensorView* v : ckpt.tensors()) {
    if (linear_names.count(v->name) || from_layers.count(v->name)) continue;
    if (head.count(v->name))
      packed.head.push_back(quantize_head_matrix(*v, *head_quant));
    else
      packed.dense.push_back({v->name, v->dtype, v->shape, {v->data, v->nbytes}});
  }
  write_packed_checkpoint(packed, cfg.out);
  store.remove();
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  summary.peak_rss_bytes = peak_rss_bytes();
  return summary;
}

}  // namespace fsq
