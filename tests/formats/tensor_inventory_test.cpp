// Tensors a checkpoint holds but the architecture does not read are refused by name, except
// the harmless extras (rotary caches, an exact copy of a tied head), which are listed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "formats/checkpoint.h"
#include "formats/tensor_inventory.h"
#include "test_support.h"

namespace fsq::test {
namespace {

struct Extra {
  std::string name;
  float value = 1.0f;
};

// A checkpoint holding every tensor the config implies (2 floats each: the inventory looks
// at names, and at bytes only to compare a saved head with the embedding), plus `extras`.
Checkpoint write_checkpoint(const TempDir& dir, const nlohmann::json& overrides, const std::vector<Extra>& extras) {
  write_bytes(dir.path() / "config.json", llama_config(overrides.is_null() ? nlohmann::json::object() : overrides));
  const ModelConfig cfg = load_model_config(dir.path() / "config.json");
  std::vector<std::string> names;
  for (const std::string& n : expected_tensor_names(arch_spec_for(cfg.architecture), cfg)) names.push_back(n);
  std::vector<std::vector<float>> values(names.size(), {1.0f, 2.0f});
  for (const Extra& e : extras) {
    names.push_back(e.name);
    values.push_back({e.value, 2.0f});
  }
  std::vector<TensorToWrite> tensors;
  for (size_t i = 0; i < names.size(); ++i) tensors.push_back({names[i], DType::F32, {2}, as_bytes(values[i])});
  write_safetensors(dir.path() / "model.safetensors", tensors);
  return Checkpoint::open(dir.path());
}

std::string refusal(const Checkpoint& ckpt) {
  try {
    check_no_unused_tensors(ckpt);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TensorInventory, CompleteCheckpointHasNothingLeftOver) {
  TempDir dir;
  const Checkpoint ckpt = write_checkpoint(dir, {}, {});
  const TensorInventory inv = take_tensor_inventory(ckpt);
  EXPECT_TRUE(inv.ignored.empty());
  EXPECT_TRUE(inv.unused.empty());
  EXPECT_EQ(refusal(ckpt), "");
}

TEST(TensorInventory, UnknownTensorsAreRefusedByName) {
  TempDir dir;
  const Checkpoint ckpt =
      write_checkpoint(dir, {}, {{"model.layers.1.mlp.extra_proj.weight"}, {"model.layers.0.mlp.gate.weight"}});
  EXPECT_EQ(take_tensor_inventory(ckpt).unused,
            (std::vector<std::string>{"model.layers.0.mlp.gate.weight", "model.layers.1.mlp.extra_proj.weight"}));
  const std::string message = refusal(ckpt);
  EXPECT_NE(message.find(dir.path().string()), std::string::npos) << message;
  EXPECT_NE(message.find("'model.layers.0.mlp.gate.weight' is not used by LlamaForCausalLM (nor are 1 more)"),
            std::string::npos)
      << message;
  // A reader beside the checkpoint (a packed folder's linears) may claim names.
  EXPECT_TRUE(take_tensor_inventory(ckpt, {"model.layers.0.mlp.gate.weight", "model.layers.1.mlp.extra_proj.weight"})
                  .unused.empty());
}

TEST(TensorInventory, BiasesFollowAttentionBias) {
  TempDir plain, biased;
  const std::string q_bias = "model.layers.0.self_attn.q_proj.bias";
  EXPECT_EQ(take_tensor_inventory(write_checkpoint(plain, {{"attention_bias", false}}, {{q_bias}})).unused,
            std::vector<std::string>{q_bias});
  const Checkpoint with_bias = write_checkpoint(biased, {{"attention_bias", true}}, {});
  const auto expected = expected_tensor_names(arch_spec_for("LlamaForCausalLM"), with_bias.config());
  EXPECT_TRUE(expected.contains(q_bias));
  EXPECT_TRUE(expected.contains("model.layers.1.self_attn.o_proj.bias"));
  EXPECT_FALSE(expected.contains("model.layers.0.mlp.down_proj.bias"));
}

TEST(TensorInventory, RotaryCachesAreListedNotRefused) {
  TempDir dir;
  const Checkpoint ckpt = write_checkpoint(dir, {}, {{"model.layers.0.self_attn.rotary_emb.inv_freq"}});
  const TensorInventory inv = take_tensor_inventory(ckpt);
  ASSERT_EQ(inv.ignored.size(), 1u);
  EXPECT_EQ(inv.ignored[0].name, "model.layers.0.self_attn.rotary_emb.inv_freq");
  EXPECT_TRUE(inv.unused.empty());
  EXPECT_EQ(refusal(ckpt), "");
}

TEST(TensorInventory, SavedTiedHeadMustEqualTheEmbedding) {
  TempDir same, different, untied;
  // Every tensor holds {1, 2}; an extra head of {1, 2} is an exact copy of the embedding.
  const Checkpoint copy = write_checkpoint(same, {{"tie_word_embeddings", true}}, {{"lm_head.weight", 1.0f}});
  EXPECT_EQ(take_tensor_inventory(copy).ignored.size(), 1u);
  EXPECT_EQ(refusal(copy), "");
  const Checkpoint other = write_checkpoint(different, {{"tie_word_embeddings", true}}, {{"lm_head.weight", 3.0f}});
  EXPECT_EQ(take_tensor_inventory(other).unused, std::vector<std::string>{"lm_head.weight"});
  EXPECT_NE(refusal(other).find("tie_word_embeddings"), std::string::npos) << refusal(other);
  // Untied: the head is expected.
  EXPECT_EQ(refusal(write_checkpoint(untied, {{"tie_word_embeddings", false}}, {})), "");
}

}  // namespace
}  // namespace fsq::test
