// The architecture table (formats/architectures.h) and what config.json and GGUF import
// derive from it.
#include "formats/architectures.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "formats/model_config.h"
#include "test_support.h"

namespace fsq::test {
namespace {

using nlohmann::json;

ModelConfig parse_as(const std::string& architecture, const json& extra = json::object()) {
  json j = json::parse(llama_config());
  j["architectures"] = json::array({architecture});
  j.erase("model_type");
  j.update(extra);
  return parse_model_config(j, "config.json");
}

// Every non-linear tensor of an architecture, for loops.
std::vector<const TensorNames*> dense_tensors(const ArchSpec& a) {
  return {&a.embed, &a.final_norm, &a.lm_head, &a.input_norm, &a.post_attn_norm};
}

TEST(Architectures, EveryRoleGroupAndNameResolves) {
  ASSERT_FALSE(all_arch_specs().empty());
  for (const ArchSpec& a : all_arch_specs()) {
    SCOPED_TRACE(a.hf_name);
    EXPECT_FALSE(a.model_type.empty());
    EXPECT_FALSE(a.gguf_arch.empty());
    EXPECT_NE(std::find(a.hidden_acts.begin(), a.hidden_acts.end(), "silu"), a.hidden_acts.end());
    EXPECT_EQ(&arch_spec_for(a.hf_name), &a);
    std::map<std::string, int> groups_of_role;
    for (const LinearGroup& g : a.groups) {
      SCOPED_TRACE(g.name);
      ASSERT_FALSE(g.roles.empty());
      for (const auto& role : g.roles) {
        EXPECT_NO_THROW(a.linear(role));
        ++groups_of_role[role];
      }
      if (g.norm.empty()) {
        ASSERT_FALSE(g.producer.empty()) << "a group without a norm folds into its producer";
        EXPECT_NO_THROW(a.linear(g.producer));
        EXPECT_EQ(g.block, BlockKind::kLinear);
      } else {
        EXPECT_TRUE(g.norm == a.input_norm.hf || g.norm == a.post_attn_norm.hf) << g.norm;
        EXPECT_NE(g.block, BlockKind::kLinear);
      }
    }
    std::set<std::string> roles;
    for (const LinearSpec& l : a.linears) {
      SCOPED_TRACE(l.role);
      EXPECT_TRUE(roles.insert(l.role).second) << "duplicate role";
      EXPECT_EQ(groups_of_role[l.role], 1) << "each linear reads exactly one group's input";
      EXPECT_EQ(l.pattern.rfind(a.layer_prefix + ".", 0), 0u) << l.pattern;
      EXPECT_EQ(l.pattern.substr(l.pattern.size() - l.role.size()), l.role);
      // Only per-head outputs can be rotary, and only query/key ones have a permutation.
      if (l.rotary_output) {
        EXPECT_NE(l.heads, OutputHeads::kNone);
      }
    }
    EXPECT_EQ(a.input_norm.hf.rfind(a.layer_prefix + ".", 0), 0u);
    EXPECT_EQ(a.post_attn_norm.hf.rfind(a.layer_prefix + ".", 0), 0u);
    EXPECT_THROW(a.linear("no_such_proj"), Error);
  }
}

TEST(Architectures, RotaryOutputsAreQueryAndKey) {
  for (const ArchSpec& a : all_arch_specs()) {
    std::set<std::string> rotary;
    for (const LinearSpec& l : a.linears)
      if (l.rotary_output) rotary.insert(l.role);
    EXPECT_EQ(rotary, (std::set<std::string>{"q_proj", "k_proj"})) << a.hf_name;
    EXPECT_EQ(a.linear("q_proj").heads, OutputHeads::kQuery);
    EXPECT_EQ(a.linear("k_proj").heads, OutputHeads::kKeyValue);
  }
}

TEST(Architectures, ConfigParserSupportsExactlyTheTable) {
  std::vector<std::string> names;
  for (const ArchSpec& a : all_arch_specs()) names.push_back(a.hf_name);
  EXPECT_EQ(supported_architectures(), names);
  for (const ArchSpec& a : all_arch_specs()) {
    const ModelConfig c = parse_as(a.hf_name);
    EXPECT_EQ(c.architecture, a.hf_name);
    EXPECT_EQ(c.model_type, a.model_type);  // the default when config.json has no model_type
  }
  try {
    arch_spec_for("GPT2LMHeadModel");
    FAIL() << "expected fsq::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("supported: " + join_names(names)), std::string::npos) << e.what();
  }
  EXPECT_EQ(find_arch_spec("GPT2LMHeadModel"), nullptr);
}

TEST(Architectures, Qwen2AlwaysHasQkvBiasLlamaAndMistralOnRequest) {
  const ArchSpec& qwen2 = arch_spec_for("Qwen2ForCausalLM");
  EXPECT_TRUE(qwen2.forced_attention_bias());
  for (const char* role : {"q_proj", "k_proj", "v_proj"}) EXPECT_EQ(qwen2.linear(role).bias, BiasRule::kAlways);
  EXPECT_EQ(qwen2.linear("o_proj").bias, BiasRule::kNever);
  EXPECT_TRUE(parse_as("Qwen2ForCausalLM").attention_bias);
  EXPECT_TRUE(parse_as("Qwen2ForCausalLM", {{"attention_bias", false}}).attention_bias);

  for (const char* name : {"LlamaForCausalLM", "MistralForCausalLM"}) {
    SCOPED_TRACE(name);
    const ArchSpec& a = arch_spec_for(name);
    EXPECT_FALSE(a.forced_attention_bias());
    for (const char* role : {"q_proj", "k_proj", "v_proj", "o_proj"})
      EXPECT_EQ(a.linear(role).bias, BiasRule::kIfAttentionBias);
    for (const char* role : {"gate_proj", "up_proj", "down_proj"}) EXPECT_EQ(a.linear(role).bias, BiasRule::kNever);
    EXPECT_FALSE(parse_as(name).attention_bias);
    EXPECT_TRUE(parse_as(name, {{"attention_bias", true}}).attention_bias);
  }
}

TEST(Architectures, GgufImportMapsEveryListedArchitecture) {
  EXPECT_EQ(supported_gguf_architectures(), (std::vector<std::string>{"llama", "qwen2"}));
  EXPECT_EQ(find_gguf_arch_spec("mamba"), nullptr);
  // llama.cpp converts Mistral as "llama": such files import as LLaMA, the same layout.
  EXPECT_EQ(arch_spec_for("MistralForCausalLM").gguf_arch, "llama");
  EXPECT_EQ(find_gguf_arch_spec("llama")->hf_name, "LlamaForCausalLM");
  EXPECT_EQ(find_gguf_arch_spec("qwen2")->hf_name, "Qwen2ForCausalLM");
  for (const ArchSpec& a : all_arch_specs()) {
    SCOPED_TRACE(a.hf_name);
    const ArchSpec* imported = find_gguf_arch_spec(a.gguf_arch);
    ASSERT_NE(imported, nullptr);
    EXPECT_EQ(imported->gguf_qk_permuted, a.gguf_qk_permuted);
    // Every tensor maps to the same HF name under the architecture the file imports as.
    for (const TensorNames* t : dense_tensors(a)) {
      const std::string gguf = layer_name(t->gguf, 3), hf = layer_name(t->hf, 3);
      EXPECT_EQ(a.hf_name_of_gguf(gguf), hf) << gguf;
      EXPECT_EQ(imported->hf_name_of_gguf(gguf), hf) << gguf;
    }
    for (const LinearSpec& l : a.linears) {
      for (const char* suffix : {".weight", ".bias"}) {
        const std::string gguf = layer_name(l.gguf, 12) + suffix;
        const LinearSpec* found = nullptr;
        EXPECT_EQ(a.hf_name_of_gguf(gguf, &found), layer_name(l.pattern, 12) + suffix) << gguf;
        EXPECT_EQ(found, &l);
        EXPECT_EQ(imported->hf_name_of_gguf(gguf), layer_name(l.pattern, 12) + suffix) << gguf;
      }
    }
    const LinearSpec* found = &a.linears.front();
    for (const char* unknown : {"blk.3.attn_q.scales", "blk.x.attn_q.weight", "blk.3.attn_qq.weight", "blk..attn_q.weight",
                                "rope_freqs.weight", "blk.3", ""})
      EXPECT_EQ(a.hf_name_of_gguf(unknown, &found), "") << unknown;
    EXPECT_EQ(found, nullptr);
  }
  EXPECT_EQ(arch_spec_for("LlamaForCausalLM").hf_name_of_gguf("blk.3.attn_q.weight"),
            "model.layers.3.self_attn.q_proj.weight");
  EXPECT_EQ(arch_spec_for("LlamaForCausalLM").hf_name_of_gguf("output.weight"), "lm_head.weight");
}

}  // namespace
}  // namespace fsq::test
