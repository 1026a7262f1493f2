// Checkpoint directories (single file and sharded) and config.json parsing.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/sha256.h"
#include "formats/checkpoint.h"
#include "formats/model_config.h"
#include "fixtures.h"
#include "test_support.h"

namespace fsq::test {
namespace {

using nlohmann::json;

const fs::path kStoriesFolder = ::fsq::testing::stories260k_dir();
// sha256 of stories260K/model.safetensors, from shared/models/MANIFEST.md.
constexpr const char* kStoriesWeightsSha =
    "c549afd8464a1250200b5338d39d23d0bf096c7f6578944268d40512c133daa6";

ModelConfig parse(const json& overrides) {
  return parse_model_config(json::parse(llama_config(overrides)), "config.json");
}

TEST(ModelConfig, Stories260KMatchesManifest) {
  const fs::path p = kStoriesFolder / "config.json";
  FSQ_REQUIRE_FIXTURE(p, ::fsq::testing::kHowToStageShared);
  ModelConfig c = load_model_config(p);
  EXPECT_EQ(c.architecture, "LlamaForCausalLM");
  EXPECT_EQ(c.model_type, "llama");
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.intermediate_size, 172);
  EXPECT_EQ(c.num_layers, 5);
  EXPECT_EQ(c.num_heads, 8);
  EXPECT_EQ(c.num_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.max_position_embeddings, 512);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
  EXPECT_FALSE(c.rope_scaling.has_value());
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_EQ(c.torch_dtype, "float32");
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_id, 2);
  EXPECT_FALSE(c.sliding_window.has_value());
}

TEST(ModelConfig, DefaultsAndFamilies) {
  ModelConfig c = parse({{"num_key_value_heads", nullptr}, {"head_dim", nullptr}});
  EXPECT_EQ(c.num_kv_heads, 8);  // defaults to num_attention_heads
  EXPECT_EQ(c.head_dim, 8);      // hidden_size / num_attention_heads

  c = parse({{"head_dim", 16}});  // explicit head_dim need not equal hidden/heads
  EXPECT_EQ(c.head_dim, 16);

  c = parse({{"architectures", json::array({"Qwen2ForCausalLM"})}, {"model_type", "qwen2"},
             {"sliding_window", 32768}, {"use_sliding_window", false}});
  EXPECT_EQ(c.architecture, "Qwen2ForCausalLM");
  EXPECT_TRUE(c.attention_bias);              // Qwen2 always has q/k/v biases
  EXPECT_FALSE(c.sliding_window.has_value());  // present but disabled

  c = parse({{"architectures", json::array({"MistralForCausalLM"})}, {"model_type", nullptr},
             {"sliding_window", 4096}, {"eos_token_id", {2, 32000}}});
  EXPECT_EQ(c.model_type, "mistral");  // derived from the architecture
  EXPECT_EQ(c.sliding_window, 4096);
  EXPECT_EQ(c.eos_token_id, 2);  // first of the list

  c = parse({{"torch_dtype", nullptr}, {"dtype", "bfloat16"}, {"bos_token_id", nullptr}});
  EXPECT_EQ(c.torch_dtype, "bfloat16");
  EXPECT_EQ(c.bos_token_id, -1);
}

TEST(ModelConfig, RopeScaling) {
  ModelConfig c = parse({{"rope_scaling",
                          {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                           {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}}}});
  ASSERT_TRUE(c.rope_scaling.has_value());
  EXPECT_EQ(c.rope_scaling->type, "llama3");
  EXPECT_DOUBLE_EQ(c.rope_scaling->factor, 8.0);
  EXPECT_EQ(c.rope_scaling->original_max_position_embeddings, 8192);

  c = parse({{"rope_scaling", {{"type", "linear"}, {"factor", 2}}}});
  ASSERT_TRUE(c.rope_scaling.has_value());
  EXPECT_EQ(c.rope_scaling->type, "linear");
  EXPECT_DOUBLE_EQ(c.rope_scaling->factor, 2.0);

  c = parse({{"rope_scaling", {{"rope_type", "default"}}}});
  EXPECT_FALSE(c.rope_scaling.has_value());

  for (const json& bad : {json{{"rope_type", "yarn"}, {"factor", 4.0}},
                          json{{"type", "dynamic"}, {"factor", 2.0}},
                          json{{"rope_type", "llama3"}, {"factor", 8.0}},  // missing keys
                          json{{"rope_type", "linear"}, {"factor", -1.0}}, json{{"factor", 2.0}},
                          json("linear")}) {
    EXPECT_THROW(parse({{"rope_scaling", bad}}), fsq::Error) << bad.dump();
  }
}

TEST(ModelConfig, RejectsBadValues) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"hidden_size", "64"}}, "\"hidden_size\" must be an integer"},
      {{{"hidden_size", 64.5}}, "\"hidden_size\" must be an integer"},
      {{{"hidden_size", nullptr}}, "\"hidden_size\" is missing"},
      {{{"vocab_size", 0}}, "\"vocab_size\" must be positive"},
      {{{"num_key_value_heads", 3}}, "multiple of num_key_value_heads"},
      {{{"head_dim", 7}}, "head_dim must be even"},
      {{{"hidden_size", 60}, {"num_attention_heads", 8}}, "multiple of num_attention_heads"},
      {{{"tie_word_embeddings", "yes"}}, "\"tie_word_embeddings\" must be true or false"},
      {{{"rms_norm_eps", 0}}, "rms_norm_eps"},
      {{{"eos_token_id", json::array({"x"})}}, "\"eos_token_id\""},
      {{{"architectures", json::array({"GPT2LMHeadModel"})}}, "unsupported architecture"},
      {{{"architectures", nullptr}}, "Qwen2ForCausalLM"},
  };
  for (const auto& [overrides, expected] : cases) {
    try {
      parse(overrides);
      ADD_FAILURE() << overrides.dump() << ": no error";
    } catch (const fsq::Error& e) {
      std::string msg = e.what();
      EXPECT_EQ(msg.rfind("config.json: ", 0), 0u) << msg;
      EXPECT_NE(msg.find(expected), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  }
}

TEST(Checkpoint, OpensStories260K) {
  FSQ_REQUIRE_FIXTURE(kStoriesFolder / "model.safetensors", ::fsq::testing::kHowToStageShared);
  Checkpoint c = Checkpoint::open(kStoriesFolder);
  EXPECT_EQ(c.config().num_layers, 5);
  EXPECT_EQ(c.tensors().size(), 47u);
  EXPECT_EQ(c.shards().size(), 1u);
  EXPECT_EQ(c.get("model.norm.weight").shape, (std::vector<int64_t>{64}));
  EXPECT_EQ(c.find("lm_head.weight"), nullptr);
  EXPECT_THROW(c.get("lm_head.weight"), fsq::Error);
  // Documented identity: sha256 over (sha256 hex of each shard + its file name).
  EXPECT_EQ(c.weights_sha256(), kStoriesWeightsSha);  // one file: its own sha256
}

// Two shards plus an index, as transformers' save_pretrained writes them.
struct Sharded {
  TempDir dir;
  std::vector<float> a{1, 2, 3, 4}, b{5, 6}, c{7, 8, 9};
  Sharded() {
    write_bytes(dir / "config.json", llama_config());
    write_safetensors(dir / "model-00001-of-00002.safetensors",
                      {{"model.a", DType::F32, {2, 2}, as_bytes(a)}, {"model.b", DType::F32, {2}, as_bytes(b)}});
    write_safetensors(dir / "model-00002-of-00002.safetensors", {{"model.c", DType::F32, {3}, as_bytes(c)}});
    write_index({{"model.a", "model-00001-of-00002.safetensors"},
                 {"model.b", "model-00001-of-00002.safetensors"},
                 {"model.c", "model-00002-of-00002.safetensors"}});
  }
  void write_index(const json& weight_map) {
    write_bytes(dir / "model.safetensors.index.json",
                json{{"metadata", {{"total_size", 36}}}, {"weight_map", weight_map}}.dump(2));
  }
};

TEST(Checkpoint, OpensTwoShards) {
  Sharded s;
  Checkpoint c = Checkpoint::open(s.dir.path());
  ASSERT_EQ(c.shards().size(), 2u);
  EXPECT_EQ(c.shards()[0]->path().filename(), "model-00001-of-00002.safetensors");
  auto all = c.tensors();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0]->name, "model.a");
  EXPECT_EQ(all[2]->name, "model.c");
  const TensorView& t = c.get("model.c");
  ASSERT_EQ(t.nbytes, s.c.size() * sizeof(float));
  EXPECT_TRUE(same_bytes(t.data, as_bytes(s.c)));
  const std::string expected =
      sha256_hex(sha256_file(s.dir / "model-00001-of-00002.safetensors") + "model-00001-of-00002.safetensors" +
                 sha256_file(s.dir / "model-00002-of-00002.safetensors") + "model-00002-of-00002.safetensors");
  EXPECT_EQ(c.weights_sha256(), expected);
}

TEST(Checkpoint, MissingShardIsNamed) {
  Sharded s;
  fs::remove(s.dir / "model-00002-of-00002.safetensors");
  try {
    Checkpoint::open(s.dir.path());
    FAIL() << "no error";
  } catch (const fsq::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("model.safetensors.index.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find("model-00002-of-00002.safetensors"), std::string::npos) << msg;
    EXPECT_NE(msg.find("does not exist"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace fsq::test
