// fsq export: fsq's weights -> files an existing inference engine loads.
//   autoawq: a packed checkpoint (fsq quantize) -> the AutoAWQ GEMM folder (vLLM, transformers).
//   gguf:    a llama.cpp GGUF or a Hugging Face folder -> the model in one of llama.cpp's
//            types, each block fitted by fsq's importance-weighted search (calibration
//            statistics when given); a packed checkpoint whose grids are llama.cpp's -> its
//            blocks carried over bit for bit.
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "calib/calib_file.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "common/output_lock.h"
#include "common/progress.h"
#include "common/sha256.h"
#include "formats/export/autoawq.h"
#include "formats/export/compressed_tensors.h"
#include "formats/export/gguf_awq.h"
#include "formats/export/gguf_export.h"
#include "formats/export/gguf_hf_source.h"
#include "formats/export/gguf_packed_source.h"
#include "formats/export/llama_rpc_launch.h"
#include "formats/export/vllm_launch.h"
#include "formats/gguf/gguf_model.h"
#include "formats/gguf/gguf_reader.h"
#include "formats/packed_checkpoint.h"
#include "options.h"
#include "plan_file.h"
#include "provenance.h"

namespace fsq::cli {
namespace {

struct ExportFlags {
  std::string format;
  std::string input;
  std::string out;
  std::string type;
  std::string calib;
  std::string plan;
  std::string emit_launch;
  std::string json;
  std::string progress = "auto";
  std::string dtype = "float16";
  std::string rounding = "search";
  bool force = false;
  bool pure = false;
  bool awq = false;
  RuntimeFlags rt;
};

int run_autoawq(const ExportFlags& f) {
  if (f.dtype != "float16")
    throw Error("--model-dtype", "belongs to --format compressed-tensors; AutoAWQ models are float16");
  if (!f.emit_launch.empty())
    throw Error("--emit-launch", "belongs to --format gguf and compressed-tensors (with --plan)");
  if (!f.type.empty() || !f.calib.empty() || f.pure || !f.plan.empty())
    throw Error("fsq export",
                "--type, --calib, --pure and --plan belong to --format gguf; autoawq takes the checkpoint's own widths");
  // Refuse a busy destination before reading (and hashing) the whole checkpoint.
  // One writer per output (common/output_lock.h), taken before any work.
  const OutputLock lock = lock_output({f.out, "--out", OutputKind::Folder}, {f.input});
  AtomicDir::check_destination(f.out);
  const PackedCheckpoint packed = PackedCheckpoint::open(f.input);
  export_autoawq(packed, f.out);
  std::printf("exported %s -> %s (AutoAWQ GEMM, %zu linears, w4 group %lld)\n", f.input.c_str(), f.out.c_str(),
              packed.linears().size(), static_cast<long long>(packed.linears().front().quant.group_size));
  return 0;
}

// The decoder layer of a linear's name ("model.layers.7.mlp.up_proj" -> 7), -1 when none.
int64_t layer_of(const std::string& name) {
  const std::string key = ".layers.";
  const size_t at = name.find(key);
  if (at == std::string::npos) return -1;
  return std::strtoll(name.c_str() + at + key.size(), nullptr, 10);
}

// export --plan places or checks whole layers: a per-linear plan is refused.
PlanFile read_layer_plan(const std::string& path) {
  PlanFile plan = read_plan_file(path);
  if (!plan.bits_per_linear.empty())
    throw Error(path, "is a per-linear plan (fsq plan --per-linear); fsq export --plan takes per-layer plans");
  return plan;
}

// Refuses a plan that the checkpoint was not quantized with: another model, another layer
// count, or a layer whose linears have other widths than the plan gives it.
void check_plan_matches(const PlanFile& plan, const std::string& plan_path, const PackedCheckpoint& packed) {
  const std::string sha = packed.manifest().value("source_sha256", "");
  if (!plan.model_sha256.empty() && !sha.empty() && plan.model_sha256 != sha)
    throw Error(plan_path, "was made for another model (sha256 " + plan.model_sha256.substr(0, 12) + "..., " +
                               packed.dir().string() + " was quantized from " + sha.substr(0, 12) + "...)");
  const int64_t layers = packed.config().value("num_hidden_layers", int64_t{0});
  if (static_cast<int64_t>(plan.bits_per_layer.size()) != layers)
    throw Error(plan_path, "gives widths for " + std::to_string(plan.bits_per_layer.size()) + " layers; " +
                               packed.dir().string() + " has " + std::to_string(layers));
  for (const PackedLinear& l : packed.linears()) {
    const int64_t layer = layer_of(l.name);
    if (layer < 0 || layer >= layers) continue;
    const int planned = plan.bits_per_layer[static_cast<size_t>(layer)];
    if (planned != l.quant.bits)
      throw Error(plan_path, "gives layer " + std::to_string(layer) + " " + std::to_string(planned) + " bits; " +
                                 l.name + " in " + packed.dir().string() + " has " + std::to_string(l.quant.bits) +
                                 " (quantize with fsq quantize --plan " + plan_path + " first)");
  }
  int64_t staged = 0;
  for (const auto& st : plan.stages) staged += st.layers;
  if (!plan.stages.empty() && staged != layers)
    throw Error(plan_path, "its stages hold " + std::to_string(staged) + " layers, the model " + std::to_string(layers));
}

void write_launch_script(const std::string& path, const std::string& script) {
  write_file_atomic(path, script);
  std::filesystem::permissions(path, std::filesystem::perms::owner_exec | std::filesystem::perms::group_exec,
                               std::filesystem::perm_options::add);
}

int run_compressed_tensors(const ExportFlags& f) {
  if (!f.type.empty() || !f.calib.empty() || f.pure || f.awq || !f.json.empty())
    throw Error("fsq export", "--type, --calib, --pure, --awq and --json belong to --format gguf; compressed-tensors "
                              "takes the checkpoint's own quant types (quantize with fsq quantize --plan for a mix)");
  if (!f.emit_launch.empty() && f.plan.empty())
    throw Error("--emit-launch", "needs --plan with pipeline stages (a plan made with --cluster or --gpu)");
  const OutputLock lock = lock_output({f.out, "--out", OutputKind::Folder}, {f.input, f.plan});
  check_output_file(f.emit_launch, "--emit-launch", {f.input, f.plan, f.out}, f.force);
  AtomicDir::check_destination(f.out);
  const PlanFile plan = f.plan.empty() ? PlanFile{} : read_layer_plan(f.plan);
  if (!f.emit_launch.empty() && plan.stages.empty())
    throw Error(f.plan, "has no pipeline stages to launch (make it with fsq plan --cluster or --gpu)");
  const PackedCheckpoint packed = PackedCheckpoint::open(f.input);
  if (!f.plan.empty()) check_plan_matches(plan, f.plan, packed);
  CompressedTensorsOptions options;
  options.dtype = f.dtype == "float32" ? DType::F32 : DType::F16;
  const CompressedTensorsReport report = export_compressed_tensors(packed, f.out, options);
  for (const std::string& note : report.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  std::string schemes;
  for (const std::string& s : report.schemes) schemes += (schemes.empty() ? "" : ", ") + s;
  std::printf("exported %s -> %s (compressed-tensors pack-quantized, %s, %lld linears: %s)\n", f.input.c_str(),
              f.out.c_str(), f.dtype.c_str(), static_cast<long long>(report.linears), schemes.c_str());
  if (!f.emit_launch.empty()) {
    write_launch_script(f.emit_launch,
                        vllm_launch_script(std::filesystem::absolute(f.out).string(), plan.stages, f.plan));
    std::printf("launch script %s: vllm serve, pipeline-parallel %zu, VLLM_PP_LAYER_PARTITION=%s\n",
                f.emit_launch.c_str(), static_cast<size_t>(std::count_if(plan.stages.begin(), plan.stages.end(),
                                                                         [](const RpcStage& s) { return s.layers > 0; })),
                vllm_layer_partition(plan.stages).c_str());
  }
  return 0;
}

// Per-input-column E[x^2] of the linear a GGUF weight belongs to, from the calibration file.
std::function<std::vector<float>(const std::string&, int64_t)> importance_from(const CalibrationFile* calib,
                                                                               const ArchSpec& arch,
                                                                               const std::string& source) {
  if (calib == nullptr) return {};
  return [calib, &arch, source](const std::string& gguf_name, int64_t cols) -> std::vector<float> {
    const LinearSpec* linear = nullptr;
    std::string hf = arch.hf_name_of_gguf(gguf_name, &linear);
    const std::string suffix = ".weight";
    if (linear == nullptr || !hf.ends_with(suffix)) return {};
    auto stats = calib->input_stats(hf.substr(0, hf.size() - suffix.size()));
    if (!stats || static_cast<int64_t>(stats->sqmean.size()) != cols) return {};
    return {stats->sqmean.begin(), stats->sqmean.end()};
  };
}

// What --format gguf reads: a .gguf file, fsq's packed folder (it has fsq.json) or a
// Hugging Face folder (config.json and safetensors).
enum class GgufInput { GgufFile, HfFolder, Packed };

GgufInput gguf_input_kind(const std::string& input) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (is_gguf_path(input)) return GgufInput::GgufFile;
  if (fs::is_directory(input, ec) && fs::exists(fs::path(input) / kPackedManifestFile, ec)) return GgufInput::Packed;
  if (fs::is_directory(input, ec) && fs::exists(fs::path(input) / "config.json", ec)) return GgufInput::HfFolder;
  throw Error(input, "--format gguf reads a llama.cpp .gguf file, a Hugging Face folder (config.json and "
                     "safetensors) or a packed checkpoint folder of fsq quantize");
}

int run_gguf(const ExportFlags& f) {
  if (f.dtype != "float16") throw Error("--model-dtype", "belongs to --format compressed-tensors; gguf takes --type");
  if (f.type.empty() && f.plan.empty())
    throw Error("fsq export", "--format gguf needs --type (" + gguf_recipe_names() + ") or --plan");
  const std::string type_name = f.type.empty() ? "Q4_K_M" : f.type;  // with --plan: the head and embeddings
  const GgufInput kind = gguf_input_kind(f.input);
  const auto recipe = parse_gguf_recipe(type_name);
  if (!recipe) throw Error("fsq export", "--type " + f.type + " is not one fsq writes; use one of " + gguf_recipe_names());
  if (!f.plan.empty() && f.pure) throw Error("fsq export", "--pure and --plan both decide the types: give one");
  if (f.awq && f.calib.empty())
    throw Error("--awq", "searches its scales from calibration statistics: give --calib (fsq calibrate on " + f.input + ")");
  if (f.rounding == "nearest" && (!f.calib.empty() || f.awq))
    throw Error("--rounding nearest", "rounds without weights (as llama-quantize without an imatrix); --calib and "
                                      "--awq need --rounding search");
  if (kind == GgufInput::Packed && (!f.calib.empty() || !f.plan.empty() || f.awq))
    throw Error("fsq export", "--calib, --awq and --plan need a .gguf or Hugging Face source; " + f.input +
                                  " is a packed checkpoint, whose linears keep their own blocks");
  const OutputLock lock = lock_output({f.out, "--out", OutputKind::File, f.force}, {f.input, f.calib, f.plan});
  check_output_file(f.json, "--json", {f.input, f.calib, f.plan, f.out}, f.force);
  check_output_file(f.emit_launch, "--emit-launch", {f.input, f.calib, f.plan, f.out, f.json}, f.force);
  const PlanFile plan_file = f.plan.empty() ? PlanFile{} : read_layer_plan(f.plan);
  const int threads = apply_threads(f.rt.threads);
  apply_progress(f.progress);

  std::shared_ptr<const GgufFile> gguf_file;
  std::unique_ptr<GgufExportSource> source;
  std::string source_sha;
  const bool needs_sha = !f.calib.empty() || !f.plan.empty();
  switch (kind) {
    case GgufInput::GgufFile:
      gguf_file = GgufFile::open(f.input);
      source = std::make_unique<GgufFileSource>(*gguf_file);
      source_sha = sha256_file(f.input);
      break;
    case GgufInput::HfFolder: {
      auto hf = std::make_unique<HfFolderSource>(f.input);
      // Hashing a 7B folder reads it once more: only where a plan or calibration file is checked.
      if (needs_sha) source_sha = hf->checkpoint().weights_sha256();
      source = std::move(hf);
      break;
    }
    case GgufInput::Packed: source = std::make_unique<PackedGgufSource>(f.input); break;
  }
  const GgufValue* arch_key = source->find("general.architecture");
  const std::string arch_name =
      arch_key != nullptr && arch_key->type() == GgufType::STRING ? std::get<std::string>(arch_key->v) : "";
  const ArchSpec* arch = find_gguf_arch_spec(arch_name);
  if (arch == nullptr)
    throw Error(f.input, "architecture '" + arch_name +
                             "' is not supported; supported: " + join_names(supported_gguf_architectures()));
  if (!plan_file.model_sha256.empty() && plan_file.model_sha256 != source_sha)
    throw Error(f.plan, "was made for another model (sha256 " + plan_file.model_sha256.substr(0, 12) + "..., " +
                            f.input + " is " + source_sha.substr(0, 12) + "...); run fsq plan --calib on a "
                            "calibration file of " + f.input);
  if (!f.emit_launch.empty()) {
    int64_t planned = 0;
    for (const auto& st : plan_file.stages) planned += st.layers;
    if (f.plan.empty() || plan_file.stages.empty())
      throw Error("--emit-launch", "needs --plan with pipeline stages (a plan made with --cluster or --gpu)");
    if (planned != static_cast<int64_t>(plan_file.bits_per_layer.size()))
      throw Error(f.plan, "its stages hold " + std::to_string(planned) + " layers, its widths " +
                              std::to_string(plan_file.bits_per_layer.size()));
  }
  // Refuses before anything is written.
  const GgufExportPlan plan = plan_gguf_export(*source, *recipe, !f.calib.empty(), f.pure, plan_file.bits_per_layer);

  std::optional<CalibrationFile> calib;
  if (!f.calib.empty())
    calib = CalibrationFile::open_for_model(f.calib, source_sha, "run fsq calibrate --model " + f.input);

  GgufExportOptions options;
  options.importance = importance_from(calib ? &*calib : nullptr, *arch, f.input);
  options.threads = threads;
  options.rounding = f.rounding == "nearest" ? GgufRounding::Nearest : GgufRounding::Search;
  options.provenance = {{"producer", producer_json()},
                        {"source_sha256", source_sha},
                        {"type", type_name},
                        {"rounding", f.rounding},
                        {"plan_bits_per_layer", plan_file.bits_per_layer},
                        {"calibration", calib ? calib->provenance().value("data_sha256", "") : ""}};
  if (f.awq) {
    Progress search("awq scales (% of groups)", 100);
    const GgufAwqScales awq = search_gguf_awq_scales(
        *source, plan, options.importance, threads,
        [&](size_t done, size_t total) { search.update(static_cast<int64_t>(100 * done / total)); });
    search.finish();
    options.column_scale = awq.column_scale;
    options.norm_divisor = awq.norm_divisor;
    options.provenance["awq"] = awq.report;
  }
  Progress progress("export " + type_name, static_cast<int64_t>(plan.tensors.size()));
  options.progress = [&](size_t done, size_t) { progress.update(static_cast<int64_t>(done)); };
  const GgufExportReport report = export_gguf(*source, plan, f.out, options);
  progress.finish();
  for (const std::string& note : source->notes()) std::fprintf(stderr, "note: %s\n", note.c_str());

  int weighted = 0, matrices = 0, carried = 0;
  for (const auto& t : report.plan.tensors) {
    if (t.dims.size() < 2) continue;
    ++matrices;
    weighted += t.weighted ? 1 : 0;
    carried += t.carried ? 1 : 0;
    // A plan's widths are what was asked for, a carried linear's type is its grid (the
    // source's notes summarize them): say only where a shape forced another type.
    const bool plan_width_as_asked = t.note.starts_with("plan: ") && t.note.find("not whole") == std::string::npos;
    if (!t.note.empty() && !plan_width_as_asked && !t.carried)
      std::fprintf(stderr, "note: %s: %s\n", t.name.c_str(), t.note.c_str());
  }
  std::string how = std::to_string(weighted) + " of " + std::to_string(matrices) + " matrices importance-weighted" +
                    (calib ? "" : ": no --calib, plain squared error");
  if (options.rounding == GgufRounding::Nearest)
    how = "Q4_0/Q4_1/Q5_0/Q5_1/Q8_0 blocks rounded plainly, other types searched";
  if (carried > 0) how = std::to_string(carried) + " of " + std::to_string(matrices) + " matrices carried over bit for bit";
  std::printf("exported %s -> %s (%s, %.3f bits/weight, %llu bytes; %s)\n", f.input.c_str(), f.out.c_str(),
              f.plan.empty() ? type_name.c_str() : ("plan " + f.plan).c_str(), report.bits_per_weight,
              static_cast<unsigned long long>(report.file_bytes), how.c_str());
  if (!f.json.empty()) write_json_report(f.json, report.to_json());
  if (!f.emit_launch.empty()) {
    write_launch_script(f.emit_launch,
                        llama_rpc_launch_script(std::filesystem::absolute(f.out).string(), plan_file.stages, f.plan));
    std::printf("launch script %s: %zu RPC stages, --tensor-split %s\n", f.emit_launch.c_str(),
                plan_file.stages.size(), llama_tensor_split(plan_file.stages).c_str());
  }
  return 0;
}

int run_export(const ExportFlags& f) {
  // Every export format is written on the CPU: --device (shared with the commands that run a
  // model) would otherwise be ignored silently.
  if (f.rt.device != "cpu")
    throw Error("--device " + f.rt.device, "fsq export runs on the CPU (it computes no forward pass); drop --device");
  if (f.format == "gguf") return run_gguf(f);
  if (f.format == "compressed-tensors") return run_compressed_tensors(f);
  return run_autoawq(f);
}

}  // namespace

Command add_export_command(CLI::App& root) {
  auto f = std::make_shared<ExportFlags>();
  CLI::App* app = root.add_subcommand(
      "export",
      "Export weights to files an existing inference engine loads.\n"
      "  autoawq: a packed checkpoint (fsq quantize) -> the AutoAWQ GEMM folder that vLLM and transformers load "
      "(4-bit, asymmetric, one group size of 32, 64 or 128; other quant types are refused with the reason).\n"
      "  compressed-tensors: a packed checkpoint -> llm-compressor's pack-quantized folder that vLLM and "
      "transformers load (any bits, group size and symmetry fsq writes, one config group per scheme, so a "
      "mixed-precision checkpoint from fsq quantize --plan keeps its per-layer widths; vLLM runs 4 and 8 bits).\n"
      "  gguf: a llama.cpp .gguf, a Hugging Face folder or a packed checkpoint -> a .gguf of --type for llama.cpp; "
      "a folder's tensors, metadata and tokenizer as llama.cpp's convert_hf_to_gguf.py writes them; tensor types "
      "follow llama-quantize's rules for that type (with and without an importance matrix), and each block's "
      "scale (and min) is searched for the least "
      "squared error, weighted per input channel by E[x^2] from --calib (fsq calibrate on the same source); a packed "
      "checkpoint's w4g32s, w4g32a and w8g32s linears keep their codes and scales as Q4_0, Q4_1 and Q8_0.");
  app->add_option("--format", f->format, "output format")->required()->check(
      CLI::IsMember({"autoawq", "compressed-tensors", "gguf"}));
  app->add_option("input", f->input, "autoawq, compressed-tensors: packed checkpoint folder; gguf: source .gguf file, Hugging Face folder "
                  "or packed checkpoint folder")
      ->required()
      ->check(CLI::ExistingPath);
  app->add_option("out,--out", f->out, "autoawq, compressed-tensors: output folder (must not exist, or be empty); gguf: output .gguf")
      ->required();
  app->add_option("--type", f->type,
                  "gguf: llama-quantize's type name: " + gguf_recipe_names() +
                      "; the K mixes give some tensors more bits exactly as llama-quantize does");
  app->add_option("--plan", f->plan,
                  "gguf: plan.json from fsq plan: layer i's matrices get its width (2 Q2_K, 3 Q3_K, 4 Q4_K, 5 Q5_K, "
                  "6 Q6_K, 8 Q8_0, 16 F16); --type (default Q4_K_M) then decides only the embeddings and head. "
                  "compressed-tensors: the plan the checkpoint was quantized with (checked), for --emit-launch")
      ->check(CLI::ExistingFile);
  app->add_option("--emit-launch", f->emit_launch,
                  "with --plan: also write a bash script that runs the export as the plan's pipeline. gguf: on "
                  "llama.cpp's RPC backend (one ggml-rpc-server per stage, --tensor-split reproducing the layer "
                  "partition); compressed-tensors: vllm serve --pipeline-parallel-size P on Ray with "
                  "VLLM_PP_LAYER_PARTITION set to the partition");
  app->add_option("--model-dtype", f->dtype,
                  "compressed-tensors: dtype of the dense tensors and scales, and config.json's torch_dtype "
                  "(float32 keeps every dense tensor exact)")
      ->capture_default_str()
      ->check(CLI::IsMember({"float16", "float32"}));
  app->add_flag("--awq", f->awq,
               "gguf with --calib: scale the input columns of the norm-fed linears (q/k/v, gate/up) by "
               "E[x^2]^(alpha/2) before blocking, folding 1/scale into the norm, alpha searched per group");
  app->add_option("--rounding", f->rounding,
                  "gguf: search fits each block's scale for the least (weighted) squared error; nearest rounds "
                  "Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 blocks once from their extremes, the arithmetic of llama-quantize "
                  "without an imatrix (the same bytes, and a 7B export in about one read of the source); K-quants "
                  "and IQ4_NL always search")
      ->capture_default_str()
      ->check(CLI::IsMember({"search", "nearest"}));
  app->add_flag("--pure", f->pure, "gguf: every matrix gets the type's base block type (llama-quantize --pure)");
  app->add_option("--calib", f->calib, "gguf: calibration file of the same .gguf (fsq calibrate) for importance weights")
      ->check(CLI::ExistingFile);
  app->add_option("--json", f->json, "gguf: also write the per-tensor types and sizes as JSON");
  add_runtime_flags(app, f->rt);
  add_progress_flag(app, f->progress);
  add_force_flag(app, f->force);
  app->footer(examples({"fsq export --format autoawq smollm2-w4g128 smollm2-awq",
                        "fsq export --format compressed-tensors smollm2-w4g128 smollm2-ct",
                        "fsq export --format compressed-tensors --plan plan.json --emit-launch serve.sh mixed mixed-ct",
                        "fsq calibrate --model smollm2-f32.gguf --data wiki.train.txt --out calib.safetensors",
                        "fsq export --format gguf --type Q4_0 --calib calib.safetensors smollm2-f32.gguf smollm2-q4_0.gguf",
                        "llama-perplexity -m smollm2-q4_0.gguf -f wiki.test.raw -c 2048",
                        "fsq export --format gguf --plan plan.json --calib calib.safetensors smollm2-f32.gguf mixed.gguf",
                        "fsq export --format gguf --type BF16 models/llama-2-7b llama-2-7b-bf16.gguf",
                        "fsq export --format gguf --type Q4_0 --pure --rounding nearest models/llama-2-7b 7b-q4_0.gguf",
                        "fsq export --format gguf --type Q4_0 q/w4g32s w4g32s-q4_0.gguf"}));
  return Command{app, [f] { return run_export(*f); }};
}

}  // namespace fsq::cli
