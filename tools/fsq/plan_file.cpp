#include "plan_file.h"

#include "common/error.h"
#include "common/json_file.h"

namespace fsq::cli {

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
  PlanFile f;
  if (per_layer)
    for (const auto& b : (*plan)["bits_per_layer"]) {
      if (!b.is_number_integer()) throw Error(path, "plan.bits_per_layer must hold integers");
      f.bits_per_layer.push_back(b.get<int>());
    }
  if (per_linear)
    for (const auto& layer : (*plan)["bits_per_linear"]) {
      if (!layer.is_object() || layer.empty())
        throw Error(path, "plan.bits_per_linear must hold one object per layer: {\"q_proj\": bits, ...}");
      std::map<std::string, int> roles;
      for (const auto& [role, b] : layer.items()) {
        if (!b.is_number_integer()) throw Error(path, "plan.bits_per_linear must hold integer widths (" + role + ")");
        roles[role] = b.get<int>();
      }
      f.bits_per_linear.push_back(std::move(roles));
    }
  if (plan->contains("stages") && (*plan)["stages"].is_array())
    for (const auto& st : (*plan)["stages"]) {
      if (!st.is_object() || !st.contains("layers") || !st["layers"].is_number_integer() || st["layers"].get<int>() < 0)
        throw Error(path, "plan.stages entries need a layer count");
      f.stages.push_back({st.value("device", std::string("?")), st.value("node", std::string("0")),
                          st["layers"].get<int64_t>()});
    }
  if (j.contains("model_sha256") && j["model_sha256"].is_string()) f.model_sha256 = j["model_sha256"].get<std::string>();
  return f;
}

}  // namespace fsq::cli
