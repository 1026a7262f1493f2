// fsq inspect: what a checkpoint directory or a .safetensors file holds.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <map>
#include <set>

#include "calib/calib_file.h"
#include "calib/calib_report.h"
#include "common/error.h"
#include "common/sha256.h"
#include "formats/checkpoint.h"
#include "formats/float_tensors.h"
#include "formats/gguf/ggml_types.h"
#include "formats/gguf/gguf_model.h"
#include "formats/gguf/gguf_reader.h"
#include "formats/packed_checkpoint.h"
#include "formats/tensor_inventory.h"
#include "runtime/model_files.h"
#include "options.h"
#include "provenance.h"

namespace fsq::cli {
namespace {

using nlohmann::json;

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

json config_json(const ModelConfig& c) {
  json j = {{"architecture", c.architecture}, {"model_type", c.model_type},
            {"hidden_size", c.hidden_size}, {"intermediate_size", c.intermediate_size},
            {"num_hidden_layers", c.num_layers}, {"num_attention_heads", c.num_heads},
            {"num_key_value_heads", c.num_kv_heads}, {"head_dim", c.head_dim},
            {"vocab_size", c.vocab_size}, {"max_position_embeddings", c.max_position_embeddings},
            {"rms_norm_eps", c.rms_norm_eps}, {"rope_theta", c.rope_theta},
            {"tie_word_embeddings", c.tie_word_embeddings}, {"attention_bias", c.attention_bias},
            {"torch_dtype", c.torch_dtype}};
  if (c.rope_scaling) j["rope_scaling"] = {{"type", c.rope_scaling->type}, {"factor", c.rope_scaling->factor}};
  return j;
}

// Tensor table, totals and per-dtype counts of a set of views.
json tensors_json(const std::vector<const TensorView*>& views) {
  json list = json::array();
  std::map<std::string, std::pair<int64_t, int64_t>> by_dtype;  // dtype -> (tensors, params)
  int64_t params = 0, bytes = 0;
  for (const TensorView* v : views) {
    std::string dt(dtype_name(v->dtype));
    list.push_back({{"name", v->name}, {"dtype", dt}, {"shape", v->shape}, {"bytes", v->nbytes}});
    params += v->numel();
    bytes += static_cast<int64_t>(v->nbytes);
    by_dtype[dt].first += 1;
    by_dtype[dt].second += v->numel();
  }
  json dtypes = json::object();
  for (const auto& [dt, cp] : by_dtype) dtypes[dt] = {{"tensors", cp.first}, {"parameters", cp.second}};
  return {{"tensors", list}, {"tensor_count", views.size()}, {"parameters", params},
          {"bytes", bytes}, {"dtypes", dtypes}};
}

std::string text_report(const json& j) {
  if (j["kind"] == "calibration file") return render_calibration_summary(j);
  std::string out = "path        " + j["path"].get<std::string>() + " (" + j["kind"].get<std::string>() + ")\n";
  if (j.contains("config")) {
    const json& c = j["config"];
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "config      %s (%s): hidden %lld, intermediate %lld, layers %lld, heads %lld "
                  "(kv %lld, head_dim %lld), vocab %lld, max positions %lld, rope theta %g, "
                  "rms eps %g, %s embeddings, %s\n",
                  c["architecture"].get<std::string>().c_str(), c["model_type"].get<std::string>().c_str(),
                  c["hidden_size"].get<long long>(), c["intermediate_size"].get<long long>(),
                  c["num_hidden_layers"].get<long long>(), c["num_attention_heads"].get<long long>(),
                  c["num_key_value_heads"].get<long long>(), c["head_dim"].get<long long>(),
                  c["vocab_size"].get<long long>(), c["max_position_embeddings"].get<long long>(),
                  c["rope_theta"].get<double>(), c["rms_norm_eps"].get<double>(),
                  c["tie_word_embeddings"].get<bool>() ? "tied" : "separate",
                  c["torch_dtype"].get<std::string>().c_str());
    out += buf;
  }
  out += "sha256      " + j["sha256"].get<std::string>() + "\n";
  out += "tensors     " + std::to_string(j["tensor_count"].get<int64_t>()) + ", parameters " +
         std::to_string(j["parameters"].get<int64_t>()) + ", bytes " +
         std::to_string(j["bytes"].get<int64_t>()) + "\n";
  for (const auto& [dt, v] : j["dtypes"].items())
    out += "  " + dt + ": " + std::to_string(v["tensors"].get<int64_t>()) + " tensors, " +
           std::to_string(v["parameters"].get<int64_t>()) + " parameters\n";
  for (const auto& q : j.value("quantized", json::array())) {
    char buf[256];
    const bool head = q.value("role", "") == "embedding_and_head";
    std::snprintf(buf, sizeof buf, "quantized   %lld %s %s (%s): %lld weights, %.3f bits/weight as stored",
                  q["linears"].get<long long>(), head ? "embedding/head matrices" : "linears",
                  q["quant_type"].get<std::string>().c_str(),
                  q["method"].get<std::string>().c_str(), q["weights"].get<long long>(),
                  q["bits_per_weight"].get<double>());
    out += buf;
    if (q["sparse_values"].get<int64_t>() > 0) out += ", " + std::to_string(q["sparse_values"].get<int64_t>()) + " sparse";
    out += "\n";
  }
  for (const auto& t : j.value("ignored_tensors", json::array()))
    out += "ignored     " + t["name"].get<std::string>() + " (" + t["why"].get<std::string>() + ")\n";
  for (const auto& name : j.value("unused_tensors", json::array()))
    out += "unused      " + name.get<std::string>() + " (not read by the architecture; eval and quantize refuse it)\n";
  for (const auto& t : j["tensors"]) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "  %-56s %-5s %-16s %12lld\n", t["name"].get<std::string>().c_str(),
                  t["dtype"].get<std::string>().c_str(), shape_text(t["shape"].get<std::vector<int64_t>>()).c_str(),
                  t["bytes"].get<long long>());
    out += buf;
  }
  return out;
}

// Tensors the runtime would not read: harmless extras it skips, and the rest, which make
// eval/quantize refuse the checkpoint. Inspect lists both instead of failing.
// A packed checkpoint's quantized linears, and its quantized embedding/head (role
// "embedding_and_head"), by type and method: count, weights, stored bytes (so bits per weight
// as stored) and the sparse values of LUT types.
json quantized_summary(const PackedCheckpoint& packed) {
  std::map<std::string, json> by_type;
  std::vector<std::pair<const PackedLinear*, const char*>> all;
  for (const PackedLinear& l : packed.linears()) all.emplace_back(&l, "linears");
  for (const PackedLinear& l : packed.head_matrices()) all.emplace_back(&l, "embedding_and_head");
  for (const auto& [lp, role] : all) {
    const PackedLinear& l = *lp;
    json& t = by_type[std::string(role) + " " + l.quant_type + " " + l.method];
    if (t.is_null()) t = {{"role", role}, {"quant_type", l.quant_type}, {"method", l.method}, {"linears", 0},
                          {"weights", 0}, {"bytes", 0}, {"sparse_values", 0}};
    int64_t bytes = 0;
    for (const TensorView* v : {l.qweight, l.scales, l.qzeros, l.lut, l.sparse_row_ptr, l.sparse_col, l.sparse_val})
      if (v) bytes += static_cast<int64_t>(v->nbytes);
    t["linears"] = t["linears"].get<int64_t>() + 1;
    t["weights"] = t["weights"].get<int64_t>() + l.rows * l.cols;
    t["bytes"] = t["bytes"].get<int64_t>() + bytes;
    if (l.sparse_val) t["sparse_values"] = t["sparse_values"].get<int64_t>() + l.sparse_val->numel();
  }
  json out = json::array();
  for (auto& [key, t] : by_type) {
    t["bits_per_weight"] = 8.0 * t["bytes"].get<double>() / t["weights"].get<double>();
    out.push_back(t);
  }
  return out;
}

void add_inventory(json& j, const Checkpoint& ckpt, const std::filesystem::path& path) {
  std::set<std::string> packed_names;
  check_float_dtypes(ckpt);  // as the model loader: a norm stored as I32 is no model
  if (is_packed_folder(path)) {
    // The same checks as eval: every tensor's sha256 against fsq.json, scales finite, and
    // the unquantized tensors (norms, embedding, head) finite.
    const PackedCheckpoint packed = PackedCheckpoint::open(path, {.verify_sha256 = true});
    check_finite_floats(ckpt);
    packed_names = packed.linear_tensor_names();
    j["quantized"] = quantized_summary(packed);
  }
  const TensorInventory inv = take_tensor_inventory(ckpt, packed_names);
  json ignored = json::array();
  for (const IgnoredTensor& t : inv.ignored) ignored.push_back({{"name", t.name}, {"why", t.why}});
  j["ignored_tensors"] = ignored;
  j["unused_tensors"] = inv.unused;
}

// A GGUF file as stored: ggml types per tensor (shapes in row-major order, as in HF), the
// model config it maps to, and the metadata keys.
json inspect_gguf(const std::filesystem::path& path) {
  auto g = GgufFile::open(path);
  json list = json::array();
  std::map<std::string, std::pair<int64_t, int64_t>> by_type;
  int64_t params = 0, bytes = 0;
  for (const GgufTensorInfo& t : g->tensors()) {
    const std::string type(ggml_type_info(t.type).name);
    list.push_back({{"name", t.name}, {"dtype", type}, {"shape", t.shape()}, {"bytes", t.nbytes}});
    params += t.n_elements;
    bytes += static_cast<int64_t>(t.nbytes);
    by_type[type].first += 1;
    by_type[type].second += t.n_elements;
  }
  json types = json::object();
  for (const auto& [type, cp] : by_type) types[type] = {{"tensors", cp.first}, {"parameters", cp.second}};
  json keys = json::array();
  for (const auto& [key, value] : g->metadata()) keys.push_back(key);
  json j = {{"tensors", list}, {"tensor_count", list.size()}, {"parameters", params}, {"bytes", bytes},
            {"dtypes", types}, {"path", path.string()}, {"kind", "GGUF v" + std::to_string(g->version())},
            {"config", config_json(model_config_from_gguf(*g))}, {"metadata_keys", keys},
            {"sha256", sha256_file(path)}};
  return j;
}

json inspect(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    Checkpoint ckpt = Checkpoint::open(path);
    json j = tensors_json(ckpt.tensors());
    j["path"] = path.string();
    j["kind"] = "checkpoint directory";
    j["shards"] = ckpt.shards().size();
    j["config"] = config_json(ckpt.config());
    j["sha256"] = ckpt.weights_sha256();
    add_inventory(j, ckpt, path);
    return j;
  }
  if (is_gguf_path(path)) return inspect_gguf(path);
  if (path.extension() != ".safetensors")
    throw Error(path.string(), "not a checkpoint directory, a .safetensors file or a .gguf file");
  auto file = SafetensorsFile::open(path);
  if (CalibrationFile::is_calibration_file(*file)) {
    json j = summarize_calibration(CalibrationFile::open(path));
    j["path"] = path.string();
    j["kind"] = "calibration file";
    j["sha256"] = sha256_file(path);
    return j;
  }
  std::vector<const TensorView*> views;
  for (const auto& t : file->tensors()) views.push_back(&t);
  std::sort(views.begin(), views.end(), [](auto* a, auto* b) { return a->name < b->name; });
  json j = tensors_json(views);
  j["path"] = path.string();
  j["kind"] = "safetensors file";
  j["metadata"] = file->metadata();
  j["sha256"] = sha256_file(path);
  return j;
}

}  // namespace

Command add_inspect_command(CLI::App& root) {
  struct Flags {
    std::string path;
    std::string json_out;
    bool force = false;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* app = root.add_subcommand(
      "inspect",
      "Show what a checkpoint directory, a .safetensors file or a .gguf file holds: config summary, tensors "
      "with dtypes, shapes and sizes, parameter count, sha256. A calibration file (fsq calibrate) is shown "
      "as per-layer activation ranges, outlier channels and Fisher magnitudes.");
  app->add_option("path", f->path, "checkpoint directory, .safetensors file or .gguf file")
      ->required()
      ->check(CLI::ExistingPath);
  app->add_option("--json", f->json_out, "print JSON instead of text; with FILE, write it there (atomically)")
      ->expected(0, 1);
  add_force_flag(app, f->force);
  app->footer(examples({"fsq inspect models/stories260K", "fsq inspect model.safetensors --json",
                        "fsq inspect models/stories260K --json info.json", "fsq inspect calib.safetensors"}));
  return Command{app, [app, f] {
                   check_output_file(f->json_out, "--json", {f->path}, f->force);
                   json j = inspect(f->path);
                   if (app->count("--json") == 0) {
                     std::fputs(text_report(j).c_str(), stdout);
                   } else if (f->json_out.empty() || f->json_out == "-") {
                     j["invocation"] = invocation_json();
                     std::fputs((j.dump(2) + "\n").c_str(), stdout);
                   } else {
                     write_json_report(f->json_out, std::move(j));
                   }
                   return 0;
                 }};
}

}  // namespace fsq::cli
