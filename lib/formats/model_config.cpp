// config.json -> ModelConfig. Hugging Face configs are loosely typed (nulls for "use the
// default", eos as a list, optional keys per architecture), so every key is read through
// one typed accessor that names the key when its JSON type is wrong.
#include "formats/model_config.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_file.h"
#include "formats/architectures.h"

namespace fsq {
namespace {

using json = nlohmann::json;

// Typed accessors: a missing key or JSON null means "use the default".
class Reader {
 public:
  Reader(const json& j, const std::string& source) : j_(j), source_(source) {}

  const json* get(const char* key) const {
    auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  [[noreturn]] void fail(const std::string& key, const std::string& problem) const {
    throw Error(source_, "key \"" + key + "\" " + problem);
  }
  [[noreturn]] void wrong_type(const char* key, const char* want, const json& v) const {
    fail(key, std::string("must be ") + want + ", got " + v.type_name() + " " +
                  v.dump(-1, ' ', true, json::error_handler_t::replace).substr(0, 60));
  }

  int64_t integer(const char* key, int64_t def, bool required = false) const {
    const json* v = get(key);
    if (!v) {
      if (required) fail(key, "is missing");
      return def;
    }
    if (!v->is_number_integer()) wrong_type(key, "an integer", *v);
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      fail(key, "is too large");
    return v->get<int64_t>();
  }
  double number(const char* key, double def) const {
    const json* v = get(key);
    if (!v) return def;
    if (!v->is_number()) wrong_type(key, "a number", *v);
    return v->get<double>();
  }
  bool boolean(const char* key, bool def) const {
    const json* v = get(key);
    if (!v) return def;
    if (!v->is_boolean()) wrong_type(key, "true or false", *v);
    return v->get<bool>();
  }
  std::string string(const char* key, const std::string& def) const {
    const json* v = get(key);
    if (!v) return def;
    if (!v->is_string()) wrong_type(key, "a string", *v);
    return v->get<std::string>();
  }
  // eos_token_id may be a single id or a list (several stop tokens): we keep the first.
  int64_t first_id(const char* key) const {
    const json* v = get(key);
    if (!v) return -1;
    if (v->is_array()) {
      if (v->empty()) return -1;
      if (!(*v)[0].is_number_integer()) wrong_type(key, "an integer or a list of integers", *v);
      return (*v)[0].get<int64_t>();
    }
    return integer(key, -1);
  }

 private:
  const json& j_;
  const std::string& source_;
};

std::string supported_list() { return join_names(supported_architectures()); }

const ArchSpec& find_architecture(const json& j, const std::string& source) {
  auto it = j.find("architectures");
  if (it == j.end() || !it->is_array() || it->empty() || !(*it)[0].is_string())
    throw Error(source, "key \"architectures\" must be a list naming one of: " + supported_list());
  const auto& name = (*it)[0].get_ref<const std::string&>();
  if (const ArchSpec* a = find_arch_spec(name)) return *a;
  std::string shown = json_quoted_ascii(name);
  if (shown.size() > 80) shown = shown.substr(0, 80) + "...";
  throw Error(source, "unsupported architecture " + shown + " (supported: " + supported_list() + ")");
}

std::optional<RopeScaling> parse_rope_scaling(const json& j, const std::string& source) {
  auto it = j.find("rope_scaling");
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_object())
    throw Error(source, std::string("key \"rope_scaling\" must be null or an object, got ") +
                            it->type_name());
  Reader r(*it, source);
  RopeScaling rs;
  rs.type = r.string("rope_type", r.string("type", ""));
  auto need = [&](const char* key) {
    if (!r.get(key)) r.fail(std::string("rope_scaling.") + key, "is missing");
  };
  if (rs.type.empty()) throw Error(source, "rope_scaling has no \"rope_type\" (or \"type\")");
  if (rs.type == "default") return std::nullopt;  // newer configs spell "no scaling" this way
  if (rs.type == "linear") {
    need("factor");
    rs.factor = r.number("factor", 1.0);
  } else if (rs.type == "llama3") {
    for (const char* key : {"factor", "low_freq_factor", "high_freq_factor",
                            "original_max_position_embeddings"})
      need(key);
    rs.factor = r.number("factor", rs.factor);
    rs.low_freq_factor = r.number("low_freq_factor", rs.low_freq_factor);
    rs.high_freq_factor = r.number("high_freq_factor", rs.high_freq_factor);
    rs.original_max_position_embeddings =
        r.integer("original_max_position_embeddings", rs.original_max_position_embeddings);
    if (rs.low_freq_factor <= 0 || rs.high_freq_factor <= rs.low_freq_factor)
      throw Error(source, "rope_scaling needs 0 < low_freq_factor < high_freq_factor");
    if (rs.original_max_position_embeddings <= 0)
      throw Error(source, "rope_scaling.original_max_position_embeddings must be positive");
  } else {
    throw Error(source, "unsupported rope_scaling type \"" + rs.type.substr(0, 40) +
                            "\" (supported: linear, llama3)");
  }
  if (!(rs.factor > 0)) throw Error(source, "rope_scaling.factor must be positive");
  return rs;
}

void require_positive(int64_t v, const char* key, const std::string& source) {
  if (v <= 0) throw Error(source, "key \"" + std::string(key) + "\" must be positive, got " + std::to_string(v));
}

}  // namespace

const std::vector<std::string>& supported_architectures() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& a : all_arch_specs()) v.push_back(a.hf_name);
    return v;
  }();
  return names;
}

ModelConfig parse_model_config(const json& j, const std::string& source) {
  if (!j.is_object()) throw Error(source, std::string("must be a JSON object, got ") + j.type_name());
  const ArchSpec& arch = find_architecture(j, source);
  Reader r(j, source);
  ModelConfig c;
  c.architecture = arch.hf_name;
  c.model_type = r.string("model_type", arch.model_type);
  c.hidden_size = r.integer("hidden_size", 0, true);
  c.intermediate_size = r.integer("intermediate_size", 0, true);
  c.num_layers = r.integer("num_hidden_layers", 0, true);
  c.num_heads = r.integer("num_attention_heads", 0, true);
  c.num_kv_heads = r.integer("num_key_value_heads", c.num_heads);
  c.vocab_size = r.integer("vocab_size", 0, true);
  c.max_position_embeddings = r.integer("max_position_embeddings", c.max_position_embeddings);
  c.rms_norm_eps = r.number("rms_norm_eps", c.rms_norm_eps);
  c.rope_theta = r.number("rope_theta", c.rope_theta);
  c.rope_scaling = parse_rope_scaling(j, source);
  c.tie_word_embeddings = r.boolean("tie_word_embeddings", c.tie_word_embeddings);
  c.attention_bias = arch.forced_attention_bias() || r.boolean("attention_bias", false);
  // The activation changes the math: refuse what the runtime does not compute, never run
  // it as SiLU. transformers' default for these architectures is silu.
  const std::string act = r.string("hidden_act", "silu");
  if (std::find(arch.hidden_acts.begin(), arch.hidden_acts.end(), act) == arch.hidden_acts.end())
    throw Error(source, "hidden_act " + quote_name(act) + " is not supported for " + arch.hf_name +
                            " (supported: " + join_names(arch.hidden_acts) + ")");
  // transformers >= 4.56 writes "dtype"; older configs "torch_dtype".
  c.torch_dtype = r.string("torch_dtype", r.string("dtype", c.torch_dtype));
  c.bos_token_id = r.first_id("bos_token_id");
  c.eos_token_id = r.first_id("eos_token_id");
  // Qwen2 configs carry a sliding_window value even when use_sliding_window is false.
  if (r.boolean("use_sliding_window", true)) {
    int64_t sw = r.integer("sliding_window", -1);
    if (sw >= 0) c.sliding_window = sw;
  }

  require_positive(c.hidden_size, "hidden_size", source);
  require_positive(c.intermediate_size, "intermediate_size", source);
  require_positive(c.num_layers, "num_hidden_layers", source);
  require_positive(c.num_heads, "num_attention_heads", source);
  require_positive(c.num_kv_heads, "num_key_value_heads", source);
  require_positive(c.vocab_size, "vocab_size", source);
  require_positive(c.max_position_embeddings, "max_position_embeddings", source);
  if (c.num_heads % c.num_kv_heads != 0)
    throw Error(source, "num_attention_heads (" + std::to_string(c.num_heads) +
                            ") must be a multiple of num_key_value_heads (" +
                            std::to_string(c.num_kv_heads) + ")");
  if (r.get("head_dim")) {
    c.head_dim = r.integer("head_dim", 0);
    require_positive(c.head_dim, "head_dim", source);
  } else {
    if (c.hidden_size % c.num_heads != 0)
      throw Error(source, "hidden_size (" + std::to_string(c.hidden_size) +
                              ") must be a multiple of num_attention_heads (" +
                              std::to_string(c.num_heads) + ") when head_dim is not given");
    c.head_dim = c.hidden_size / c.num_heads;
  }
  if (c.head_dim % 2 != 0)  // RoPE rotates pairs of dimensions
    throw Error(source, "head_dim must be even for RoPE, got " + std::to_string(c.head_dim));
  if (!(c.rms_norm_eps > 0)) throw Error(source, "key \"rms_norm_eps\" must be positive");
  if (!(c.rope_theta > 0)) throw Error(source, "key \"rope_theta\" must be positive");
  return c;
}

ModelConfig load_model_config(const std::filesystem::path& config_json) {
  const std::string where = config_json.string();
  const json j = read_json_file(config_json);
  return parse_model_config(j, where);
}

}  // namespace fsq
