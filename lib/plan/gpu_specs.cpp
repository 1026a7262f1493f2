#include "plan/gpu_specs.h"

#include <algorithm>
#include <cctype>

#include <cmath>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_file.h"

namespace fsq::plan {

extern const char* const kBuiltinGpuSpecsJson;  // generated from gpu_specs.json

namespace {

double positive_number(const nlohmann::json& entry, const char* key, const std::string& where, bool allow_zero) {
  if (!entry.contains(key) || !entry[key].is_number())
    throw Error(where, std::string("missing number '") + key + "'");
  double v = entry[key].get<double>();
  if (!std::isfinite(v) || !(v > 0 || (allow_zero && v == 0))) throw Error(where, std::string("'") + key + "' must be positive");
  return v;
}

}  // namespace

bool same_gpu_type(const std::string& a, const std::string& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

GpuSpecTable GpuSpecTable::from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object() || !j.contains("gpus") || !j["gpus"].is_array())
    throw Error(source, "expected an object with a \"gpus\" array");
  check_known_keys(j, {"gpus", "_about"}, source);
  GpuSpecTable table;
  for (size_t i = 0; i < j["gpus"].size(); ++i) {
    const auto& e = j["gpus"][i];
    std::string where = source + ": gpus[" + std::to_string(i) + "]";
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string() || e["name"].get<std::string>().empty())
      throw Error(where, "missing string 'name'");
    check_known_keys(e, {"name", "memory_gib", "fp16_tflops", "int8_tops", "bandwidth_gbs"}, where);
    GpuSpec s;
    s.name = e["name"].get<std::string>();
    s.memory_gib = positive_number(e, "memory_gib", where, false);
    s.fp16_tflops = positive_number(e, "fp16_tflops", where, false);
    s.int8_tops = positive_number(e, "int8_tops", where, true);
    s.bandwidth_gbs = positive_number(e, "bandwidth_gbs", where, false);
    for (const auto& prev : table.specs_)
      if (same_gpu_type(prev.name, s.name)) throw Error(where, "GPU type " + quote_name(s.name) + " listed twice");
    table.specs_.push_back(s);
  }
  return table;
}

GpuSpecTable GpuSpecTable::builtin() {
  return from_json(nlohmann::json::parse(kBuiltinGpuSpecsJson), "built-in gpu_specs.json");
}

GpuSpecTable GpuSpecTable::load(const std::filesystem::path& path) {
  return from_json(read_json_file(path), path.string());
}

void GpuSpecTable::merge(const GpuSpecTable& other) {
  for (const auto& s : other.specs_) {
    auto it = std::find_if(specs_.begin(), specs_.end(), [&](const GpuSpec& x) { return same_gpu_type(x.name, s.name); });
    if (it != specs_.end())
      *it = s;
    else
      specs_.push_back(s);
  }
}

void GpuSpecTable::add_if_unknown(const GpuSpec& spec) {
  for (const auto& s : specs_)
    if (same_gpu_type(s.name, spec.name)) return;
  specs_.push_back(spec);
}

const GpuSpec& GpuSpecTable::find(const std::string& name, const std::string& where) const {
  for (const auto& s : specs_)
    if (same_gpu_type(s.name, name)) return s;
  std::string known;
  for (const auto& s : specs_) known += (known.empty() ? "" : ", ") + s.name;
  throw Error(where, "unknown GPU type " + quote_name(name) + " (known: " + known +
                         "; add others with --gpu-specs FILE)");
}

}  // namespace fsq::plan
