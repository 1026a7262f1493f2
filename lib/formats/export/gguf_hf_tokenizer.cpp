#include "formats/export/gguf_hf_tokenizer.h"

#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "formats/tokenizer/gguf_tokenizer.h"

namespace fsq {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// llama.cpp's token types (tokenizer.ggml.token_type); SentencePiece's piece types share them.
enum HfTokenType : int32_t { kTokNormal = 1, kTokUnknown = 2, kTokControl = 3, kTokUserDefined = 4, kTokUnused = 5,
                             kTokByte = 6 };

std::string read_whole_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string(), "cannot be read");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

json read_json_or_null(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return nullptr;
  try {
    return json::parse(read_whole_file(path));
  } catch (const json::exception& e) {
    throw Error(path.string(), std::string("is not valid JSON: ") + e.what());
  }
}

// --- tokenizer.model: just enough of protobuf's wire format to read the pieces -----------

class ProtoCursor {
 public:
  ProtoCursor(std::string_view bytes, const std::string& where) : p_(bytes), where_(where) {}
  bool done() const { return at_ >= p_.size(); }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (done()) fail();
      const auto b = static_cast<uint8_t>(p_[at_++]);
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) return v;
    }
    fail();
  }
  std::string_view bytes() {
    const uint64_t n = varint();
    if (n > p_.size() - at_) fail();
    std::string_view s = p_.substr(at_, n);
    at_ += n;
    return s;
  }
  float f32() {
    if (p_.size() - at_ < 4) fail();
    float f;
    std::memcpy(&f, p_.data() + at_, 4);
    at_ += 4;
    return f;
  }
  void skip(int wire) {
    switch (wire) {
      case 0: varint(); return;
      case 1: advance(8); return;
      case 2: bytes(); return;
      case 5: advance(4); return;
      default: fail();
    }
  }
  [[noreturn]] void fail() const { throw Error(where_, "is not a SentencePiece model (malformed protobuf)"); }

 private:
  void advance(size_t n) {
    if (p_.size() - at_ < n) fail();
    at_ += n;
  }
  std::string_view p_;
  size_t at_ = 0;
  const std::string& where_;
};

struct SpmPiece {
  std::string text;
  float score = 0;
  int32_t type = kTokNormal;
};

std::vector<SpmPiece> read_spm_pieces(const fs::path& path) {
  const std::string data = read_whole_file(path), where = path.string();
  std::vector<SpmPiece> pieces;
  ProtoCursor model(data, where);
  while (!model.done()) {
    const uint64_t tag = model.varint();
    if (tag != ((1u << 3) | 2u)) {  // ModelProto.pieces
      model.skip(static_cast<int>(tag & 7));
      continue;
    }
    ProtoCursor piece(model.bytes(), where);
    SpmPiece p;
    while (!piece.done()) {
      const uint64_t t = piece.varint();
      if (t == ((1u << 3) | 2u)) p.text = std::string(piece.bytes());
      else if (t == ((2u << 3) | 5u)) p.score = piece.f32();
      else if (t == ((3u << 3) | 0u)) p.type = static_cast<int32_t>(piece.varint());
      else piece.skip(static_cast<int>(t & 7));
    }
    pieces.push_back(std::move(p));
  }
  if (pieces.empty()) throw Error(where, "holds no pieces (not a SentencePiece model)");
  return pieces;
}

// --- shared ------------------------------------------------------------------------------

// gguf-py's heuristic for added tokens that are control tokens without saying so.
bool looks_special(const std::string& t) {
  auto wrapped = [&](std::string_view open, std::string_view close) {
    return t.size() >= open.size() + close.size() && t.starts_with(open) && t.ends_with(close);
  };
  return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" || wrapped("<|", "|>") ||
         wrapped("<\xEF\xBD\x9C", "\xEF\xBD\x9C>") || wrapped("<start_of_", ">") || wrapped("<end_of_", ">");
}

// User-defined tokens are stored pre-normalized: SentencePiece's U+2581 back to a space.
std::string unescape_spaces(std::string s) {
  for (size_t at; (at = s.find("\xE2\x96\x81")) != std::string::npos;) s.replace(at, 3, " ");
  return s;
}

struct Vocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;  // empty for BPE
  std::vector<int32_t> types;
};

GgufValue strings_value(std::vector<std::string> v) {
  const size_t n = v.size();
  return GgufValue{GgufArray(GgufType::STRING, n, {}, std::move(v), {})};
}

template <typename T>
GgufValue numbers_value(GgufType type, const std::vector<T>& v) {
  std::vector<std::byte> raw(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(raw.data(), v.data(), raw.size());
  return GgufValue{GgufArray(type, v.size(), std::move(raw), {}, {})};
}

Vocab sentencepiece_vocab(const fs::path& dir, int64_t vocab_size) {
  const std::vector<SpmPiece> pieces = read_spm_pieces(dir / "tokenizer.model");
  const auto n = static_cast<size_t>(vocab_size > 0 ? vocab_size : static_cast<int64_t>(pieces.size()));
  Vocab v;
  for (size_t i = 0; i < n; ++i) v.tokens.push_back("[PAD" + std::to_string(i) + "]");
  v.scores.assign(n, -10000.0f);
  v.types.assign(n, kTokUnused);
  for (size_t i = 0; i < pieces.size() && i < n; ++i) {
    const int32_t t = pieces[i].type;
    v.tokens[i] = pieces[i].text;
    v.scores[i] = pieces[i].score;
    v.types[i] = (t == kTokUnknown || t == kTokControl || t == kTokUnused || t == kTokByte) ? t : kTokNormal;
  }
  const json added = read_json_or_null(dir / "added_tokens.json");
  if (added.is_object())
    for (const auto& [text, id] : added.items())
      if (id.is_number_unsigned() && id.get<uint64_t>() < n) {
        v.tokens[id.get<size_t>()] = text;
        v.scores[id.get<size_t>()] = -1000.0f;
        v.types[id.get<size_t>()] = kTokUserDefined;
      }
  const json config = read_json_or_null(dir / "tokenizer_config.json");
  if (config.is_object() && config.contains("added_tokens_decoder") && config["added_tokens_decoder"].is_object())
    for (const auto& [key, entry] : config["added_tokens_decoder"].items()) {
      size_t id = 0;
      try {
        id = std::stoul(key);
      } catch (const std::exception&) {
        continue;
      }
      if (id >= n || !entry.is_object() || !entry.contains("content") || !entry["content"].is_string()) continue;
      std::string text = entry["content"].get<std::string>();
      const bool control = entry.value("special", false) || looks_special(text);
      v.types[id] = control ? kTokControl : kTokUserDefined;
      v.tokens[id] = control ? text : unescape_spaces(text);
      v.scores[id] = -1000.0f;
    }
  return v;
}

std::string merge_text(const json& m, const std::string& where) {
  if (m.is_string()) return m.get<std::string>();
  if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
    // A space inside a part would split the stored "a b" wrongly: llama.cpp's converter
    // shifts it to U+0120, the byte-level space.
    auto part = [](std::string s) {
      for (size_t at; (at = s.find(' ')) != std::string::npos;) s.replace(at, 1, "\xC4\xA0");
      return s;
    };
    return part(m[0].get<std::string>()) + " " + part(m[1].get<std::string>());
  }
  throw Error(where, "model.merges holds an entry that is neither \"a b\" nor [\"a\", \"b\"]");
}

Vocab bpe_vocab(const json& doc, const std::string& where, int64_t vocab_size) {
  const json& model = doc.at("model");
  std::map<int64_t, std::string> by_id;
  for (const auto& [text, id] : model.at("vocab").items())
    if (id.is_number_integer()) by_id[id.get<int64_t>()] = text;
  std::map<int64_t, json> added;
  if (doc.contains("added_tokens") && doc["added_tokens"].is_array())
    for (const json& a : doc["added_tokens"])
      if (a.contains("id") && a["id"].is_number_integer() && a.contains("content") && a["content"].is_string()) {
        by_id[a["id"].get<int64_t>()] = a["content"].get<std::string>();
        added[a["id"].get<int64_t>()] = a;
      }
  if (by_id.empty()) throw Error(where, "model.vocab is empty");
  const int64_t n = vocab_size > 0 ? vocab_size : by_id.rbegin()->first + 1;
  if (by_id.rbegin()->first >= n)
    throw Error(where, "holds token id " + std::to_string(by_id.rbegin()->first) + ", past config.json's vocab_size " +
                           std::to_string(n));
  Vocab v;
  for (int64_t i = 0; i < n; ++i) {
    auto it = by_id.find(i);
    if (it == by_id.end()) {
      v.tokens.push_back("[PAD" + std::to_string(i) + "]");
      v.types.push_back(kTokUnused);
      continue;
    }
    std::string text = it->second;
    int32_t type = kTokNormal;
    if (auto a = added.find(i); a != added.end()) {
      const bool control = a->second.value("special", false) || looks_special(text);
      type = control ? kTokControl : kTokUserDefined;
      if (!control) text = unescape_spaces(text);
    }
    v.tokens.push_back(std::move(text));
    v.types.push_back(type);
  }
  return v;
}

// gguf-py's SpecialVocab: ids and add-token flags from tokenizer_config.json and config.json.
void add_special_tokens(GgufMetadata& md, const json& tokenizer_json, const json& tokenizer_config,
                        const json& config, size_t n_vocab) {
  struct Kind {
    const char* hf;
    const char* gguf;
  };
  static constexpr Kind kKinds[] = {{"bos", "bos"}, {"eos", "eos"},  {"unk", "unknown"}, {"sep", "seperator"},
                                    {"pad", "padding"}, {"cls", "cls"}, {"mask", "mask"}};
  auto added_id = [&](const std::string& content) -> std::optional<int64_t> {
    if (!tokenizer_json.is_object() || !tokenizer_json.contains("added_tokens")) return std::nullopt;
    for (const json& a : tokenizer_json["added_tokens"])
      if (a.value("content", "") == content && a.contains("id") && a["id"].is_number_integer())
        return a["id"].get<int64_t>();
    return std::nullopt;
  };
  for (const Kind& k : kKinds) {
    std::optional<int64_t> id;
    if (tokenizer_config.is_object() && tokenizer_config.contains(std::string(k.hf) + "_token")) {
      const json& e = tokenizer_config[std::string(k.hf) + "_token"];
      if (e.is_string()) id = added_id(e.get<std::string>());
      else if (e.is_object() && e.contains("content") && e["content"].is_string())
        id = added_id(e["content"].get<std::string>());
    }
    if (!id && config.is_object() && config.contains(std::string(k.hf) + "_token_id")) {
      const json& e = config[std::string(k.hf) + "_token_id"];
      if (e.is_number_integer()) id = e.get<int64_t>();
    }
    if (id && *id >= 0 && static_cast<size_t>(*id) < n_vocab)
      md.emplace_back(std::string("tokenizer.ggml.") + k.gguf + "_token_id",
                      GgufValue{static_cast<uint32_t>(*id)});
  }
  if (tokenizer_config.is_object())
    for (const char* k : {"bos", "eos", "sep"}) {
      const std::string key = std::string("add_") + k + "_token";
      if (tokenizer_config.contains(key) && tokenizer_config[key].is_boolean())
        md.emplace_back("tokenizer.ggml." + key, GgufValue{tokenizer_config[key].get<bool>()});
    }
  if (tokenizer_config.is_object() && tokenizer_config.contains("chat_template") &&
      tokenizer_config["chat_template"].is_string())
    md.emplace_back("tokenizer.chat_template", GgufValue{tokenizer_config["chat_template"].get<std::string>()});
}

void set_key(GgufMetadata& md, const std::string& key, GgufValue value) {
  for (auto& [k, v] : md)
    if (k == key) {
      v = std::move(value);
      return;
    }
  md.emplace_back(key, std::move(value));
}

}  // namespace

GgufMetadata gguf_tokenizer_metadata(const fs::path& dir, const json& config, int64_t vocab_size, bool llama_rules) {
  std::error_code ec;
  const fs::path spm = dir / "tokenizer.model", hf_json = dir / "tokenizer.json";
  const bool has_spm = fs::is_regular_file(spm, ec), has_json = fs::is_regular_file(hf_json, ec);
  if (!has_spm && !has_json) return {};
  GgufMetadata md;
  // Special ids are looked up in tokenizer.json's added tokens whenever it exists, also
  // beside a tokenizer.model (as gguf-py's SpecialVocab does).
  const json tokenizer_json = has_json ? read_json_or_null(hf_json) : json();
  Vocab v;
  if (has_spm) {
    v = sentencepiece_vocab(dir, vocab_size);
    md.emplace_back("tokenizer.ggml.model", GgufValue{std::string("llama")});
    md.emplace_back("tokenizer.ggml.pre", GgufValue{std::string("default")});
  } else {
    const std::string where = hf_json.string();
    if (!tokenizer_json.is_object() || !tokenizer_json.contains("model") ||
        tokenizer_json["model"].value("type", "") != "BPE" || !tokenizer_json["model"].contains("vocab"))
      throw Error(where, "is not a BPE tokenizer.json (fsq exports byte-level BPE tokenizer.json and tokenizer.model)");
    const json& pre = tokenizer_json.contains("pre_tokenizer") ? tokenizer_json["pre_tokenizer"] : json();
    const json& norm = tokenizer_json.contains("normalizer") ? tokenizer_json["normalizer"] : json();
    const std::string pre_name = gguf_pre_of_tokenizer_json(norm, pre);
    if (pre_name.empty())
      throw Error(where, "its pre-tokenizer is not one llama.cpp names that fsq recognizes (GPT-2 byte level, "
                         "SmolLM/StarCoder digits, Llama 3, Qwen2)");
    v = bpe_vocab(tokenizer_json, where, vocab_size);
    md.emplace_back("tokenizer.ggml.model", GgufValue{std::string("gpt2")});
    md.emplace_back("tokenizer.ggml.pre", GgufValue{pre_name});
  }
  const size_t n_vocab = v.tokens.size();
  md.emplace_back("tokenizer.ggml.tokens", strings_value(std::move(v.tokens)));
  if (has_spm) md.emplace_back("tokenizer.ggml.scores", numbers_value(GgufType::FLOAT32, v.scores));
  md.emplace_back("tokenizer.ggml.token_type", numbers_value(GgufType::INT32, v.types));
  if (!has_spm) {
    std::vector<std::string> merges;
    const json& m = tokenizer_json["model"].contains("merges") ? tokenizer_json["model"]["merges"] : json::array();
    for (const json& e : m) merges.push_back(merge_text(e, hf_json.string()));
    md.emplace_back("tokenizer.ggml.merges", strings_value(std::move(merges)));
  }
  const json tokenizer_config = read_json_or_null(dir / "tokenizer_config.json");
  add_special_tokens(md, tokenizer_json, tokenizer_config, config, n_vocab);
  if (llama_rules) {
    if (tokenizer_config.is_object() && tokenizer_config.contains("add_prefix_space") &&
        tokenizer_config["add_prefix_space"].is_boolean())
      set_key(md, "tokenizer.ggml.add_space_prefix", GgufValue{tokenizer_config["add_prefix_space"].get<bool>()});
    if (vocab_size == 49152) set_key(md, "tokenizer.ggml.add_bos_token", GgufValue{false});
  }
  return md;
}

}  // namespace fsq
