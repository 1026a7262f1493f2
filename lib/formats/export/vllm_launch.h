// The launch script that serves an fsq plan's compressed-tensors export with vLLM's pipeline
// parallelism: a Ray cluster with one GPU per stage and `vllm serve --pipeline-parallel-size
// P` with VLLM_PP_LAYER_PARTITION set to the plan's contiguous layer counts.
#pragma once

#include <string>
#include <vector>

#include "formats/export/llama_rpc_launch.h"

namespace fsq {

// VLLM_PP_LAYER_PARTITION for the stages that hold layers: "10,10,10". vLLM reads it as the
// decoder layers of each pipeline rank in order; it must sum to num_hidden_layers.
std::string vllm_layer_partition(const std::vector<RpcStage>& stages);

// A bash script (set -euo pipefail): starts a Ray head here when START_RAY=1 (default),
// prints the `ray start --address` line for the other nodes, and execs
// "${VLLM:-vllm}" serve MODEL --quantization compressed-tensors --pipeline-parallel-size P
// --distributed-executor-backend ray "$@".
std::string vllm_launch_script(const std::string& model_dir, const std::vector<RpcStage>& stages,
                               const std::string& plan_path);

}  // namespace fsq
