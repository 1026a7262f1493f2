#include "plan/model_spec.h"

#include <cctype>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_file.h"

namespace fsq::plan {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

struct Preset {
  const char* name;
  ModelSpec spec;
};

// Sizes from each model's published config.json.
const std::vector<Preset>& presets() {
  static const std::vector<Preset> table = {
      {"opt-13b", {"opt-13b", Family::kOpt, 40, 5120, 20480, 40, 40, 50272, 2048, true, false}},
      {"opt-30b", {"opt-30b", Family::kOpt, 48, 7168, 28672, 56, 56, 50272, 2048, true, false}},
      {"opt-66b", {"opt-66b", Family::kOpt, 64, 9216, 36864, 72, 72, 50272, 2048, true, false}},
      {"bloom-176b", {"bloom-176b", Family::kBloom, 70, 14336, 57344, 112, 112, 250880, 0, true, false}},
      {"llama-2-7b", {"llama-2-7b", Family::kLlama, 32, 4096, 11008, 32, 32, 32000, 4096, false, false}},
      {"llama-2-13b", {"llama-2-13b", Family::kLlama, 40, 5120, 13824, 40, 40, 32000, 4096, false, false}},
      {"llama-2-70b", {"llama-2-70b", Family::kLlama, 80, 8192, 28672, 64, 8, 32000, 4096, false, false}},
      {"llama-3-8b", {"llama-3-8b", Family::kLlama, 32, 4096, 14336, 32, 8, 128256, 8192, false, false}},
      {"llama-3-70b", {"llama-3-70b", Family::kLlama, 80, 8192, 28672, 64, 8, 128256, 8192, false, false}},
      {"smollm2-135m", {"smollm2-135m", Family::kLlama, 30, 576, 1536, 9, 3, 49152, 8192, true, false}},
  };
  return table;
}

// The largest value the planner takes for a config field: far above any published model, low
// enough that the sizes computed from them stay in int64 and their tables fit in memory (a
// num_hidden_layers of 10^12 ended in std::bad_alloc).
int64_t config_limit(const std::string& key) {
  if (key == "num_hidden_layers" || key == "n_layer") return 4096;
  if (key == "vocab_size") return int64_t{1} << 24;
  if (key == "max_position_embeddings") return int64_t{1} << 30;
  return int64_t{1} << 20;  // widths and head counts
}

int64_t positive_int(const nlohmann::json& j, const char* key, const std::string& source) {
  if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<int64_t>() <= 0)
    throw Error(source, std::string("config field '") + key + "' must be a positive integer");
  if (j[key].is_number_unsigned() ? j[key].get<uint64_t>() > static_cast<uint64_t>(config_limit(key))
                                  : j[key].get<int64_t>() > config_limit(key))
    throw Error(source, std::string("config field '") + key + "' is " + j[key].dump() + "; the planner takes at most " +
                            std::to_string(config_limit(key)) + " (fix the config)");
  return j[key].get<int64_t>();
}

void validate(const ModelSpec& m, const std::string& source) {
  if (m.hidden % m.heads != 0) throw Error(source, "hidden size is not a multiple of the head count");
  if (m.kv_heads <= 0 || m.heads % m.kv_heads != 0)
    throw Error(source, "key/value head count must divide the head count");
}

}  // namespace

std::vector<LinearShape> layer_linears(const ModelSpec& m) {
  const int64_t h = m.hidden, kv = m.kv_dim(), f = m.ffn;
  if (m.family == Family::kBloom)  // fused query_key_value
    return {{"query_key_value", h, 3 * h}, {"dense", h, h}, {"dense_h_to_4h", h, f}, {"dense_4h_to_h", f, h}};
  std::vector<LinearShape> l = {{"q_proj", h, h}, {"k_proj", h, kv}, {"v_proj", h, kv}};
  if (m.family == Family::kOpt) {
    l.push_back({"out_proj", h, h});
    l.push_back({"fc1", h, f});
    l.push_back({"fc2", f, h});
  } else {
    l.push_back({"o_proj", h, h});
    l.push_back({"gate_proj", h, f});
    l.push_back({"up_proj", h, f});
    l.push_back({"down_proj", f, h});
  }
  return l;
}

int64_t layer_linear_params(const ModelSpec& m) {
  int64_t n = 0;
  for (const auto& l : layer_linears(m)) n += l.in * l.out;
  return n;
}

int64_t layer_fp16_params(const ModelSpec& m) {
  if (m.family == Family::kLlama) return 2 * m.hidden + (m.qkv_bias ? m.hidden + 2 * m.kv_dim() : 0);
  int64_t biases = 0;
  for (const auto& l : layer_linears(m)) biases += l.out;
  return biases + 4 * m.hidden;  // two LayerNorms with weight and bias
}

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const auto& p : presets()) names.push_back(p.name);
  return names;
}

ModelSpec model_preset(const std::string& name) {
  for (const auto& p : presets())
    if (lower(name) == p.name) return p.spec;
  std::string known;
  for (const auto& p : presets()) known += (known.empty() ? "" : ", ") + std::string(p.name);
  throw Error("--preset", "unknown model preset " + quote_name(name) + " (known: " + known + ")");
}

ModelSpec model_spec_from_config(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) throw Error(source, "expected a JSON object");
  std::string type = j.contains("model_type") && j["model_type"].is_string() ? j["model_type"].get<std::string>() : "";
  ModelSpec m;
  m.name = j.contains("_name_or_path") && j["_name_or_path"].is_string() ? j["_name_or_path"].get<std::string>() : type;
  if (type == "llama" || type == "mistral" || type == "qwen2") {
    m.family = Family::kLlama;
    m.layers = positive_int(j, "num_hidden_layers", source);
    m.hidden = positive_int(j, "hidden_size", source);
    m.ffn = positive_int(j, "intermediate_size", source);
    m.heads = positive_int(j, "num_attention_heads", source);
    m.kv_heads = j.contains("num_key_value_heads") ? positive_int(j, "num_key_value_heads", source) : m.heads;
    m.vocab = positive_int(j, "vocab_size", source);
    m.max_positions = j.contains("max_position_embeddings") ? positive_int(j, "max_position_embeddings", source) : 0;
    m.tied_embeddings = j.value("tie_word_embeddings", false);
    m.qkv_bias = type == "qwen2" || j.value("attention_bias", false);
  } else if (type == "opt") {
    m.family = Family::kOpt;
    m.layers = positive_int(j, "num_hidden_layers", source);
    m.hidden = positive_int(j, "hidden_size", source);
    m.ffn = positive_int(j, "ffn_dim", source);
    m.heads = positive_int(j, "num_attention_heads", source);
    m.kv_heads = m.heads;
    m.vocab = positive_int(j, "vocab_size", source);
    m.max_positions = positive_int(j, "max_position_embeddings", source);
    m.tied_embeddings = j.value("tie_word_embeddings", true);
    if (j.contains("word_embed_proj_dim") && j["word_embed_proj_dim"] != j["hidden_size"])
      throw Error(source, "OPT with word_embed_proj_dim != hidden_size (opt-350m) is not supported");
  } else if (type == "bloom") {
    m.family = Family::kBloom;
    m.layers = positive_int(j, j.contains("n_layer") ? "n_layer" : "num_hidden_layers", source);
    m.hidden = positive_int(j, j.contains("hidden_size") ? "hidden_size" : "n_embed", source);
    m.ffn = 4 * m.hidden;
    m.heads = positive_int(j, j.contains("n_head") ? "n_head" : "num_attention_heads", source);
    m.kv_heads = m.heads;
    m.vocab = positive_int(j, "vocab_size", source);
    m.tied_embeddings = true;
  } else {
    throw Error(source, "model_type " + quote_name(type) +
                            " is not supported by the planner (supported: llama, mistral, qwen2, opt, bloom)");
  }
  validate(m, source);
  return m;
}

ModelSpec load_model_spec(const std::filesystem::path& path) {
  std::filesystem::path file = std::filesystem::is_directory(path) ? path / "config.json" : path;
  return model_spec_from_config(read_json_file(file), file.string());
}

}  // namespace fsq::plan
