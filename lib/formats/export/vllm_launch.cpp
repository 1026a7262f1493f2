#include "formats/export/vllm_launch.h"

#include "common/error.h"
#include "formats/export/shell_quote.h"

namespace fsq {

std::string vllm_layer_partition(const std::vector<RpcStage>& stages) {
  std::string out;
  for (const auto& s : stages)
    if (s.layers > 0) out += (out.empty() ? "" : ",") + std::to_string(s.layers);
  if (out.empty()) throw Error("vLLM launch", "the plan has no stage with layers");
  return out;
}

std::string vllm_launch_script(const std::string& model_dir, const std::vector<RpcStage>& stages,
                               const std::string& plan_path) {
  const std::string partition = vllm_layer_partition(stages);
  int pipeline = 0;
  std::string stage_lines;
  for (const auto& st : stages) {
    if (st.layers == 0) continue;
    stage_lines += "#   rank " + std::to_string(pipeline++) + ": " + std::to_string(st.layers) + " layers on " +
                   st.device + " (node " + st.node + ")\n";
  }
  return "#!/usr/bin/env bash\n"
         "# Written by fsq export --emit-launch from " + plan_path + ": serves " + model_dir + "\n"
         "# with vLLM's pipeline parallelism, one GPU per stage of that plan:\n" + stage_lines +
         "# vLLM assigns pipeline ranks to the Ray cluster's GPUs itself: start the nodes' Ray\n"
         "# workers so that each stage's GPU is the only one Ray sees there (CUDA_VISIBLE_DEVICES).\n"
         "#   VLLM        the vllm program (default: vllm on PATH)\n"
         "#   START_RAY   1 (default): start a Ray head on this node first; 0: the cluster runs already\n"
         "#   RAY_PORT    the head's port (default 6379)\n"
         "# Arguments are passed to vllm serve.\n"
         "set -euo pipefail\n"
         "export VLLM_PP_LAYER_PARTITION=\"" + partition + "\"\n"
         "if [[ \"${START_RAY:-1}\" == 1 ]]; then\n"
         "  ray start --head --port \"${RAY_PORT:-6379}\" >&2\n"
         "  echo \"on each other node: ray start --address $(hostname -I | awk '{print $1}'):${RAY_PORT:-6379}\" >&2\n"
         "fi\n"
         "exec \"${VLLM:-vllm}\" serve " + shell_single_quoted(model_dir) +
         " --quantization compressed-tensors --pipeline-parallel-size " + std::to_string(pipeline) +
         " --tensor-parallel-size 1 --distributed-executor-backend ray \"$@\"\n";
}

}  // namespace fsq
