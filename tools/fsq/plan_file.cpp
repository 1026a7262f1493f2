#include "plan_file.h"

#include "common/error.h"
#include "common/json_file.h"

namespace fsq::cli {

PlanFile read_plan_file(const std::string& path) {
  const nlohmann::json j = read_json_file(path);
  const nlohmann::json* plan = j.is_object() && j.contains("plan") && j["plan"].is_object() ? &j["plan"] : nullptr;
  if (plan == nullptr || !plan->contains("bits_per_layer") || !(*plan)["bits_per_layer"].is_array() ||
      (*plan)["bits_per_layer"].empty())
    throw Error(path, "is not a plan from fsq plan (no plan.bits_per_layer)");
  PlanFile f;
  for (const auto& b : (*plan)["bits_per_layer"]) {
    if (!b.is_number_integer()) throw Error(path, "plan.bits_per_layer must hold integers");
    f.bits_per_layer.push_back(b.get<int>());
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
