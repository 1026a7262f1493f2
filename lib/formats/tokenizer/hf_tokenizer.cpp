// Hugging Face tokenizer.json with a BPE model: added tokens, normalizer, pre-tokenizer,
// BPE, ByteLevel decoder; the pipeline order of tokenizers' Tokenizer::encode.
#include <fstream>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "common/sha256.h"
#include "formats/tokenizer/added_tokens.h"
#include "formats/tokenizer/bpe_model.h"
#include "formats/tokenizer/byte_level.h"
#include "formats/tokenizer/normalizer.h"
#include "formats/tokenizer/pretokenizer.h"
#include "formats/tokenizer/token_id.h"
#include "common/json_file.h"
#include "formats/tokenizer/tokenizer_impl.h"
#include "formats/tokenizer/utf8.h"

namespace fsq::tok {
namespace {

const nlohmann::json& tokenizer_member(const nlohmann::json& j, const char* key) {
  static const nlohmann::json null_value;
  auto it = j.find(key);
  return it == j.end() ? null_value : *it;
}

enum class DecoderKind { ByteLevel, Join, Unsupported };

DecoderKind parse_decoder(const nlohmann::json& d) {
  if (d.is_null()) return DecoderKind::Join;  // tokenizers joins tokens with spaces
  const std::string type = d.is_object() ? d.value("type", std::string()) : "";
  if (type == "ByteLevel") return DecoderKind::ByteLevel;
  if (type == "Sequence")
    for (const auto& sub : tokenizer_member(d, "decoders"))
      if (parse_decoder(sub) == DecoderKind::ByteLevel) return DecoderKind::ByteLevel;
  return DecoderKind::Unsupported;
}

// The BOS id a post-processor puts in front of a single sequence (Llama-3's
// TemplateProcessing "<|begin_of_text|> $A", Roberta/Bert's cls) as the file writes it
// (checked by the caller), or nullptr.
const nlohmann::json* template_bos(const nlohmann::json& p) {
  if (!p.is_object()) return nullptr;
  const std::string type = p.value("type", std::string());
  if (type == "Sequence") {
    for (const auto& sub : tokenizer_member(p, "processors"))
      if (const nlohmann::json* id = template_bos(sub)) return id;
    return nullptr;
  }
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    const auto& cls = tokenizer_member(p, "cls");
    return cls.is_array() && cls.size() == 2 && cls[1].is_number_integer() ? &cls[1] : nullptr;
  }
  if (type != "TemplateProcessing") return nullptr;
  const auto& single = tokenizer_member(p, "single");
  if (!single.is_array() || single.empty() || !single[0].contains("SpecialToken")) return nullptr;
  const auto& name = tokenizer_member(single[0]["SpecialToken"], "id");
  if (!name.is_string()) return nullptr;
  const auto& special = tokenizer_member(tokenizer_member(p, "special_tokens"), name.get<std::string>().c_str());
  const auto& ids = tokenizer_member(special, "ids");
  return ids.is_array() && !ids.empty() && ids[0].is_number_integer() ? &ids[0] : nullptr;
}

// The tokens a tokenizer.json defines (vocab entries plus added tokens): sets the id bound.
int64_t defined_tokens(const nlohmann::json& j) {
  const auto& vocab = tokenizer_member(tokenizer_member(j, "model"), "vocab");
  const auto& added = tokenizer_member(j, "added_tokens");
  return static_cast<int64_t>((vocab.is_object() ? vocab.size() : 0) + (added.is_array() ? added.size() : 0));
}

class HfTokenizer final : public TokenizerImpl {
 public:
  HfTokenizer(const std::filesystem::path& path, const nlohmann::json& j)
      : where_(path.string()),
        ids_(where_, defined_tokens(j)),
        model_(tokenizer_member(j, "model"), where_, ids_),
        added_(tokenizer_member(j, "added_tokens"), where_,
               [this](std::string_view t) { return model_.token_to_id(t); }, ids_),
        normalizer_(tokenizer_member(j, "normalizer"), where_),
        pre_(tokenizer_member(j, "pre_tokenizer"), where_),
        decoder_(parse_decoder(tokenizer_member(j, "decoder"))) {
    path_ = path;
    int32_t max_id = model_.max_id();
    for (const AddedToken& a : added_.tokens()) max_id = std::max(max_id, a.id);
    pieces_.resize(max_id + 1);
    for (int32_t id = 0; id <= model_.max_id(); ++id)
      if (const std::string* t = model_.id_to_token(id)) pieces_[id] = {*t, true, false};
    for (const AddedToken& a : added_.tokens()) pieces_[a.id] = {a.content, true, true};
    if (const nlohmann::json* bos = template_bos(tokenizer_member(j, "post_processor"))) {
      bos_id_ = ids_.parse(*bos, "post_processor's BOS id");
      if (!has_id(bos_id_))
        throw Error(where_, "post_processor's BOS id " + std::to_string(bos_id_) + " is not a token of the vocab");
    }
    add_bos_ = bos_id_ >= 0;
    ids_ = TokenIds(where_, 0);  // the checks are done: drop its copy of every token text
  }

  std::vector<int32_t> encode(std::string_view text) const override {
    if (const size_t bad = find_invalid_utf8(text); bad != std::string_view::npos)
      throw Error(where_, "input text is not valid UTF-8 (byte offset " + std::to_string(bad) + ")");
    std::vector<int32_t> ids;
    Cache cache;
    std::vector<Segment> raw, normalized;
    std::vector<std::string> words;
    added_.split(text, false, raw);
    for (const Segment& s : raw) {
      if (s.id >= 0) {
        ids.push_back(s.id);
        continue;
      }
      const std::string_view piece = text.substr(s.begin, s.end - s.begin);
      std::string storage;
      std::string_view norm = piece;
      if (!normalizer_.identity()) norm = storage = normalizer_.apply(piece);
      normalized.clear();
      added_.split(norm, true, normalized);
      for (const Segment& n : normalized) {
        if (n.id >= 0) {
          ids.push_back(n.id);
          continue;
        }
        words.clear();
        pre_.split(norm.substr(n.begin, n.end - n.begin), words);
        for (const std::string& w : words) encode_word(w, cache, ids);
      }
    }
    return ids;
  }

  std::string decode(const std::vector<int32_t>& ids) const override {
    if (decoder_ == DecoderKind::Unsupported)
      throw UnsupportedTokenizer(where_, "decoding needs a ByteLevel decoder (or none)");
    std::string out;
    bool first = true;
    for (int32_t id : ids) {
      // Unknown ids are skipped, as tokenizers does; special tokens are kept.
      if (id < 0 || static_cast<size_t>(id) >= pieces_.size() || !pieces_[id].present) continue;
      const std::string& t = pieces_[id].text;
      if (decoder_ == DecoderKind::Join) {
        if (!first) out += ' ';
        out += t;
      } else if (!byte_level_decode(t, out)) {
        out += t;  // a token outside the byte map (e.g. an added "<|π|>") stands for itself
      }
      first = false;
    }
    return out;
  }

  int32_t vocab_size() const override { return static_cast<int32_t>(pieces_.size()); }
  std::string kind() const override { return "bpe"; }

  bool has_id(int32_t id) const override {
    return id >= 0 && static_cast<size_t>(id) < pieces_.size() && pieces_[id].present;
  }

  int32_t token_to_id(std::string_view token) const override {
    if (const AddedToken* a = added_.find(token)) return a->id;
    return model_.token_to_id(token);
  }

 private:
  // Words repeat constantly in running text; their ids are cached per encode() call, which
  // keeps encode() const and thread-safe.
  using Cache = std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>>;
  static constexpr size_t kMaxCacheEntries = 1 << 18;

  void encode_word(const std::string& word, Cache& cache, std::vector<int32_t>& ids) const {
    if (auto it = cache.find(word); it != cache.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
    std::vector<int32_t> word_ids;
    if (pre_.byte_level()) {
      std::string mapped;
      byte_level_encode(word, mapped);
      model_.encode_word(mapped, word_ids);
    } else {
      model_.encode_word(word, word_ids);
    }
    ids.insert(ids.end(), word_ids.begin(), word_ids.end());
    if (cache.size() >= kMaxCacheEntries) cache.clear();
    cache.emplace(word, std::move(word_ids));
  }

  struct Piece {
    std::string text;
    bool present = false;
    bool added = false;
  };
  std::string where_;
  TokenIds ids_;  // every id of the file, checked and claimed before any table is sized by it;
                  // emptied once the constructor is done
  BpeModel model_;
  AddedTokens added_;
  Normalizer normalizer_;
  PreTokenizer pre_;
  DecoderKind decoder_;
  std::vector<Piece> pieces_;  // id -> token text, for decode
};

}  // namespace

std::unique_ptr<TokenizerImpl> make_hf_tokenizer(const nlohmann::json& j,
                                                 const std::filesystem::path& source) {
  if (!j.is_object()) throw Error(source.string(), "top level is not a JSON object");
  if (!j.contains("model")) throw Error(source.string(), "no 'model' section");
  try {
    return std::make_unique<HfTokenizer>(source, j);
  } catch (const nlohmann::json::exception& e) {
    throw Error(source.string(), one_line(std::string("malformed tokenizer.json: ") + e.what()));
  }
}

std::unique_ptr<TokenizerImpl> open_hf_tokenizer_json(const std::filesystem::path& path) {
  std::unique_ptr<TokenizerImpl> tok = make_hf_tokenizer(read_json_file(path), path);
  tok->set_sha256(sha256_file(path));
  return tok;
}

}  // namespace fsq::tok
