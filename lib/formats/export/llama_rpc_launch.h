// The launch script that runs an fsq plan on llama.cpp's RPC backend: one ggml-rpc-server per
// pipeline stage (on that stage's node) and the main llama.cpp process offloading every layer
// with a --tensor-split that reproduces the plan's contiguous layer partition.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fsq {

struct RpcStage {
  std::string device;  // GPU type from the plan ("A100-40G")
  std::string node;    // cluster node name
  int64_t layers = 0;  // contiguous decoder layers, in stage order
};

// --tensor-split proportions for llama.cpp: stage i's layer count, the last stage one more
// for the output layer (llama.cpp splits n_layers + 1 layers by cumulative fraction, layer l
// going to the first device whose cumulative share exceeds l / (n_layers + 1)). Stages
// without layers are left out, as they are left out of --rpc.
std::string llama_tensor_split(const std::vector<RpcStage>& stages);

// A bash script (set -euo pipefail): starts the servers of stages on this host when
// START_SERVERS=1 (default; hosts default to 127.0.0.1, override HOST_<node>), waits for
// their ports, runs "$LLAMA_BIN/${LLAMA_TOOL:-llama-server}" -m GGUF --rpc ... -ngl 999
// --tensor-split ... "$@", and stops the servers it started on exit.
std::string llama_rpc_launch_script(const std::string& gguf, const std::vector<RpcStage>& stages,
                                    const std::string& plan_path);

}  // namespace fsq
