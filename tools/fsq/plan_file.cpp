#include "plan_file.h"

#include <cmath>

#include "common/error.h"
#include "common/json_file.h"
#include "common/widths.h"

namespace fsq::cli {

namespace {

// Every key fsq plan writes (plan_to_json, the bit assignment, write_json_report): any other
// key is a typo or another tool's file, refused instead of ignored.
void check_plan_keys(const nlohmann::json& j, const std::string& path) {
  check_known_keys(j,
                   {"kind", "model", "model_sha256", "omega_source", "widths", "group_size", "target_bits",
                    "granularity", "plan", "per_layer_plan", "uniform", "omega_per_layer", "omega_per_linear",
                    "invocation", "cluster", "workload", "cost_model", "search", "baselines", "speedup_vs_uniform",
                    "speedup_vs_pipeedge"},
                   path);
  check_known_keys(j["plan"],
                   {"found", "status", "solve_seconds", "prefill_microbatch", "decode_microbatch", "latency_s",
                    "throughput_tokens_s", "sum_omega", "avg_bits", "objective", "bits_per_layer", "bits_per_linear",
                    "device_order", "layers_per_stage", "stages"},
                   path + ": plan");
  // The budget a plan was made for: a number when given (NaN is written as null).
  for (const char* key : {"target_bits"})
    if (j.contains(key) && !(j[key].is_number() && std::isfinite(j[key].get<double>()) && j[key].get<double>() > 0))
      throw Error(path, std::string("'") + key + "' holds " + j[key].dump().substr(0, 40) + ", not a positive number of bits");
}

}  // namespace

PlanFile read_plan_file(const std::string& path) {
  const nlohmann::json j = read_json_file(path);
  const nlohmann::json* plan = j.is_object() && j.contains("plan") && j["plan"].is_object() ? &j["plan"] : nullptr;
  auto non_empty_array = [&](const char* key) {
    return plan != nullptr && plan->contains(key) && (*plan)[key].is_array() && !(*plan)[key].empty();
  };
  const bool per_layer = non_empty_array("bits_per_layer"), per_linear = non_empty_array("bits_per_linear");
  if (per_layer == per_linear)
    throw Error(path, per_layer ? "holds both plan.bits_per_layer and plan.bits_per_linear; keep one"
                                : "is not a plan from fsq plan (no plan.bits_per_layer or plan.bits_per_linear)");
  check_plan_keys(j, path);
  PlanFile f;
  // Widths through the one width parser (common/widths.h): read at full width, so 2^32 + 4
  // is refused instead of wrapping to 4.
  if (per_layer) {
    const auto& widths = (*plan)["bits_per_layer"];
    for (size_t i = 0; i < widths.size(); ++i)
      f.bits_per_layer.push_back(width_from_json(widths[i], path, "plan.bits_per_layer[" + std::to_string(i) + "]"));
  }
  if (per_linear) {
    const auto& layers = (*plan)["bits_per_linear"];
    for (size_t i = 0; i < layers.size(); ++i) {
      const auto& layer = layers[i];
      if (!layer.is_object() || layer.empty())
        throw Error(path, "plan.bits_per_linear must hold one object per layer: {\"q_proj\": bits, ...}");
      std::map<std::string, int> roles;
      for (const auto& [role, b] : layer.items())
        roles[role] = width_from_json(b, path, "plan.bits_per_linear[" + std::to_string(i) + "]." + role);
      f.bits_per_linear.push_back(std::move(roles));
    }
  }
  if (plan->contains("stages") && (*plan)["stages"].is_array())
    for (const auto& st : (*plan)["stages"]) {
      if (!st.is_object() || !st.contains("layers") || !st["layers"].is_number_integer() || st["layers"].get<int64_t>() < 0)
        throw Error(path, "plan.stages entries need a layer count");
      f.stages.push_back({st.value("device", std::string("?")), st.value("node", std::string("0")),
                          st["layers"].get<int64_t>()});
    }
  if (j.contains("model_sha256") && j["model_sha256"].is_string()) f.model_sha256 = j["model_sha256"].get<std::string>();
  return f;
}

}  // namespace fsq::cli
