// plan.json from `fsq plan`, as the commands that apply a plan read it (quantize --plan,
// export --plan): the width of each decoder layer, the layers of each pipeline stage, and
// the model's sha256 when the plan was made from a calibration file.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "formats/export/llama_rpc_launch.h"

namespace fsq::cli {

struct PlanFile {
  // Exactly one of the two is non-empty.
  std::vector<int> bits_per_layer;
  std::vector<std::map<std::string, int>> bits_per_linear;  // per layer: linear role -> bits
  std::vector<RpcStage> stages;       // pipeline stages in order; empty for a plan without devices
  std::string model_sha256;           // "" when the plan does not name its model
};

// Throws fsq::Error naming the file when it is not a plan from fsq plan.
PlanFile read_plan_file(const std::string& path);

}  // namespace fsq::cli
