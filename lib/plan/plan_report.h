// plan.json and the table fsq plan prints.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "plan/planner.h"

namespace fsq::plan {

nlohmann::json plan_to_json(const PlanRequest& request, const PlanReport& report);
// Human-readable: workload, the plan's stages, and the three methods side by side.
std::string plan_table(const PlanRequest& request, const PlanReport& report);

}  // namespace fsq::plan
