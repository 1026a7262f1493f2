// The launch scripts for a plan's pipeline: vLLM (VLLM_PP_LAYER_PARTITION, pipeline size)
// and llama.cpp RPC (--tensor-split); stages without layers are left out, paths are quoted,
// and bash accepts both scripts' syntax.
#include "formats/export/vllm_launch.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "common/error.h"
#include "export_test_support.h"
#include "formats/export/llama_rpc_launch.h"

namespace fsq {
namespace {

const std::vector<RpcStage> kStages = {
    {"A100-40G", "a", 12}, {"T4-16G", "b", 0}, {"V100-32G", "b", 10}, {"T4-16G", "c", 8}};

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// bash -n on the script: syntax only, nothing runs.
int bash_syntax_status(const std::string& script) {
  test::TempDir tmp;
  const auto path = tmp / "launch.sh";
  test::write_bytes(path, script);
  return std::system(("bash -n '" + path.string() + "'").c_str());
}

TEST(VllmLaunch, PartitionIsTheStagesLayerCountsWithoutEmptyStages) {
  EXPECT_EQ(vllm_layer_partition(kStages), "12,10,8");
  EXPECT_THROW(vllm_layer_partition({{"T4-16G", "a", 0}}), Error);
}

TEST(VllmLaunch, ScriptServesTheFolderWithOneRankPerStage) {
  const std::string s = vllm_launch_script("/models/it's here", kStages, "plan.json");
  EXPECT_TRUE(contains(s, "export VLLM_PP_LAYER_PARTITION=\"12,10,8\"\n")) << s;
  EXPECT_TRUE(contains(s, "serve '/models/it'\\''s here' --quantization compressed-tensors --pipeline-parallel-size 3 "
                          "--tensor-parallel-size 1 --distributed-executor-backend ray \"$@\"")) << s;
  EXPECT_TRUE(contains(s, "#   rank 1: 10 layers on V100-32G (node b)\n")) << s;
  EXPECT_EQ(bash_syntax_status(s), 0) << s;
}

TEST(LlamaRpcLaunch, TensorSplitGivesTheLastStageTheOutputLayer) {
  EXPECT_EQ(llama_tensor_split(kStages), "12,10,9");
  const std::string s = llama_rpc_launch_script("/m/x.gguf", kStages, "plan.json");
  EXPECT_TRUE(contains(s, "--tensor-split 12,10,9")) << s;
  EXPECT_TRUE(contains(s, "-m '/m/x.gguf' --rpc \"$HOST_a:$((port_base + 0)),$HOST_b:$((port_base + 1)),"
                          "$HOST_c:$((port_base + 2))\"")) << s;
  EXPECT_EQ(bash_syntax_status(s), 0) << s;
}

}  // namespace
}  // namespace fsq
