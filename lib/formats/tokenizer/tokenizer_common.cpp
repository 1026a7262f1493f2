// Tokenizer::encode_default and load_tokenizer: picking the tokenizer file of a checkpoint
// directory and its BOS/EOS policy from tokenizer_config.json and config.json.
#include <cstdint>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/json_file.h"
#include "formats/gguf/gguf_model.h"
#include "formats/gguf/gguf_reader.h"
#include "formats/tokenizer/tokenizer_impl.h"

namespace fsq {

std::vector<int32_t> Tokenizer::encode_default(std::string_view text) const {
  std::vector<int32_t> ids;
  if (add_bos_ && bos_id_ >= 0) ids.push_back(bos_id_);
  const std::vector<int32_t> body = encode(text);
  ids.insert(ids.end(), body.begin(), body.end());
  return ids;
}

namespace tok {

std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text;
}

namespace {

// Parsed JSON object of an optional side file; null when the file is absent.
nlohmann::json read_optional_json(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) return nullptr;
  const nlohmann::json j = read_json_file(path);
  if (!j.is_object()) throw Error(path.string(), "top level is not a JSON object");
  return j;
}

// config.json ids: an integer, or a list whose first entry is the main one (Llama-3.1 eos).
// An id given must name a token of the tokenizer: a BOS/EOS past the vocabulary would be
// fed to (or awaited from) the model as garbage, so it is an error naming config.json.
int32_t config_id(const nlohmann::json& config, const char* key, int32_t fallback, const TokenizerImpl& t,
                  const std::filesystem::path& config_path) {
  auto it = config.find(key);
  if (it == config.end()) return fallback;
  const nlohmann::json* v = nullptr;
  if (it->is_number_integer()) v = &*it;
  else if (it->is_array() && !it->empty() && (*it)[0].is_number_integer()) v = &(*it)[0];
  if (v == nullptr) return fallback;
  const bool fits = v->is_number_unsigned() ? v->get<uint64_t>() <= static_cast<uint64_t>(INT32_MAX)
                                            : v->get<int64_t>() >= 0 && v->get<int64_t>() <= INT32_MAX;
  const auto id = fits ? static_cast<int32_t>(v->get<int64_t>()) : -1;
  if (!fits || !t.has_id(id))
    throw Error(config_path.string(), std::string(key) + " " + v->dump() + " is not a token of the tokenizer " +
                                          t.path().string() + " (" + std::to_string(t.vocab_size()) + " ids)");
  return id;
}

// tokenizer_config.json tokens: "<s>" or {"content": "<s>", ...}; mapped through the vocab.
int32_t config_token(const nlohmann::json& config, const char* key, const TokenizerImpl& t,
                     int32_t fallback) {
  auto it = config.find(key);
  if (it == config.end()) return fallback;
  std::string text;
  if (it->is_string()) text = it->get<std::string>();
  else if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    text = (*it)["content"].get<std::string>();
  else
    return fallback;
  const int32_t id = t.token_to_id(text);
  return id >= 0 ? id : fallback;
}

}  // namespace
}  // namespace tok

std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& model_dir) {
  namespace fs = std::filesystem;
  if (is_gguf_path(model_dir)) return load_gguf_tokenizer(*GgufFile::open(model_dir));
  if (!fs::is_directory(model_dir)) throw Error(model_dir.string(), "not a directory");
  const fs::path json_path = model_dir / "tokenizer.json", sp_path = model_dir / "tokenizer.model";
  std::unique_ptr<tok::TokenizerImpl> t;
  if (fs::exists(json_path)) {
    try {
      t = tok::open_hf_tokenizer_json(json_path);
    } catch (const tok::UnsupportedTokenizer&) {
      // e.g. Llama-2's Metaspace tokenizer.json: its tokenizer.model is the same tokenizer.
      if (!fs::exists(sp_path)) throw;
      t = tok::open_sentencepiece(sp_path);
    }
  } else if (fs::exists(sp_path)) {
    t = tok::open_sentencepiece(sp_path);
  } else {
    throw Error(model_dir.string(), "no tokenizer.json or tokenizer.model in the model directory");
  }
  int32_t bos = t->bos_id(), eos = t->eos_id();
  bool add_bos = t->add_bos();
  const nlohmann::json config = tok::read_optional_json(model_dir / "config.json");
  if (config.is_object()) {
    bos = tok::config_id(config, "bos_token_id", bos, *t, model_dir / "config.json");
    eos = tok::config_id(config, "eos_token_id", eos, *t, model_dir / "config.json");
  }
  const nlohmann::json tcfg = tok::read_optional_json(model_dir / "tokenizer_config.json");
  if (tcfg.is_object()) {
    bos = tok::config_token(tcfg, "bos_token", *t, bos);
    eos = tok::config_token(tcfg, "eos_token", *t, eos);
    if (auto it = tcfg.find("add_bos_token"); it != tcfg.end() && it->is_boolean())
      add_bos = it->get<bool>();
  }
  t->set_special(bos, eos, add_bos);
  return t;
}

std::unique_ptr<Tokenizer> load_sentencepiece(const std::filesystem::path& tokenizer_model) {
  return tok::open_sentencepiece(tokenizer_model);
}

std::unique_ptr<Tokenizer> load_hf_tokenizer_json(const std::filesystem::path& tokenizer_json) {
  return tok::open_hf_tokenizer_json(tokenizer_json);
}

}  // namespace fsq
