// Model shapes from config.json and presets; clear errors for what the planner cannot model.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "plan/model_spec.h"

namespace fsq::plan {
namespace {

std::string error_of(const nlohmann::json& j) {
  try {
    model_spec_from_config(j, "cfg.json");
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(ModelSpec, LlamaFamilyConfig) {
  nlohmann::json j = {{"model_type", "llama"},        {"num_hidden_layers", 30}, {"hidden_size", 576},
                      {"intermediate_size", 1536},    {"num_attention_heads", 9}, {"num_key_value_heads", 3},
                      {"vocab_size", 49152},          {"tie_word_embeddings", true}};
  ModelSpec m = model_spec_from_config(j, "cfg.json");
  EXPECT_EQ(m.family, Family::kLlama);
  EXPECT_EQ(m.kv_dim(), 192);
  EXPECT_TRUE(m.tied_embeddings);
  // SmolLM2-135M's preset is the same shape.
  ModelSpec p = model_preset("SmolLM2-135M");
  EXPECT_EQ(layer_linear_params(m), layer_linear_params(p));
  EXPECT_EQ(layer_linear_params(m), 2LL * 576 * 576 + 2LL * 576 * 192 + 3LL * 576 * 1536);
  j["model_type"] = "qwen2";
  EXPECT_EQ(layer_fp16_params(model_spec_from_config(j, "cfg.json")), 2 * 576 + 576 + 2 * 192);
}

TEST(ModelSpec, OptAndBloomConfigs) {
  nlohmann::json opt = {{"model_type", "opt"},         {"num_hidden_layers", 48}, {"hidden_size", 7168},
                        {"ffn_dim", 28672},            {"num_attention_heads", 56}, {"vocab_size", 50272},
                        {"max_position_embeddings", 2048}, {"word_embed_proj_dim", 7168}};
  ModelSpec m = model_spec_from_config(opt, "cfg.json");
  ModelSpec p = model_preset("opt-30b");
  EXPECT_EQ(m.family, Family::kOpt);
  EXPECT_EQ(layer_linear_params(m), layer_linear_params(p));
  EXPECT_EQ(layer_fp16_params(m), layer_fp16_params(p));
  nlohmann::json bloom = {{"model_type", "bloom"}, {"n_layer", 70}, {"hidden_size", 14336}, {"n_head", 112},
                          {"vocab_size", 250880}};
  ModelSpec b = model_spec_from_config(bloom, "cfg.json");
  EXPECT_EQ(b.ffn, 4 * 14336);
  EXPECT_EQ(layer_linear_params(b), layer_linear_params(model_preset("bloom-176b")));
  // BLOOM's fused query_key_value: h x 3h.
  EXPECT_EQ(layer_linears(b)[0].out, 3 * 14336);
}

TEST(ModelSpec, ErrorsNameTheFileAndTheProblem) {
  EXPECT_EQ(error_of({{"model_type", "gpt2"}}),
            "cfg.json: model_type 'gpt2' is not supported by the planner (supported: llama, mistral, qwen2, opt, bloom)");
  EXPECT_EQ(error_of({{"model_type", "llama"}, {"num_hidden_layers", 2}}),
            "cfg.json: config field 'hidden_size' must be a positive integer");
  EXPECT_EQ(error_of({{"model_type", "llama"}, {"num_hidden_layers", 2}, {"hidden_size", 64}, {"intermediate_size", 128},
                      {"num_attention_heads", 5}, {"vocab_size", 10}}),
            "cfg.json: hidden size is not a multiple of the head count");
  try {
    model_preset("gpt-5");
    FAIL();
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("unknown model preset 'gpt-5' (known: opt-13b"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fsq::plan
