// Tokenizer from GGUF metadata (llama.cpp's tokenizer.ggml.* keys). A "gpt2" tokenizer is
// rebuilt as the tokenizer.json document Hugging Face would ship for it (vocab, merges,
// control/user-defined tokens as added tokens, the pre-tokenizer tokenizer.ggml.pre names),
// so GGUF and tokenizer.json share one byte-level BPE implementation. A "llama" tokenizer
// is rebuilt as a SentencePiece ModelProto and loaded by libsentencepiece, like tokenizer.model.
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/sha256.h"
#include "formats/gguf/gguf_reader.h"
#include "formats/tokenizer/gguf_tokenizer.h"
#include "formats/tokenizer/tokenizer_impl.h"

namespace fsq {
namespace tok {
namespace {

using nlohmann::json;

// llama.cpp's token types (tokenizer.ggml.token_type).
enum TokenType : int64_t {
  kUndefined = 0, kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6,
};

// The pre-tokenizer regexes of the Hugging Face tokenizer.json files these names stand for.
const char* const kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

json byte_level(bool use_regex) {
  return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
          {"use_regex", use_regex}};
}

json split_then_byte_level(const char* regex) {
  return {{"type", "Sequence"},
          {"pretokenizers",
           json::array({json{{"type", "Split"}, {"pattern", {{"Regex", regex}}},
                             {"behavior", "Isolated"}, {"invert", false}},
                        byte_level(false)})}};
}

// What one tokenizer.ggml.pre name means in tokenizer.json terms.
struct PreSpec {
  const char* name;
  json pre_tokenizer;
  json normalizer;
  bool ignore_merges;
};

std::vector<PreSpec> pre_specs() {
  const json digits_then_byte_level = {
      {"type", "Sequence"},
      {"pretokenizers", json::array({json{{"type", "Digits"}, {"individual_digits", true}},
                                     byte_level(true)})}};
  return {
      // "default" is what llama.cpp's converter writes for an unrecognized GPT-2-style file.
      {"default", byte_level(true), nullptr, false},
      {"gpt2", byte_level(true), nullptr, false},
      {"gpt-2", byte_level(true), nullptr, false},  // what llama.cpp's converter writes for GPT-2
      // SmolLM/SmolLM2 and StarCoder ship the same pre-tokenizer: single digits, then GPT-2.
      {"smollm", digits_then_byte_level, nullptr, false},
      {"starcoder", digits_then_byte_level, nullptr, false},
      {"llama-bpe", split_then_byte_level(kLlama3Regex), nullptr, true},
      {"llama3", split_then_byte_level(kLlama3Regex), nullptr, true},
      {"qwen2", split_then_byte_level(kQwen2Regex), json{{"type", "NFC"}}, false},
  };
}

// `actual` has every key of `spec` with the same value (recursively; arrays element by
// element): a tokenizer.json may carry keys the name does not depend on.
bool json_covers(const json& actual, const json& spec) {
  if (spec.is_object()) {
    if (!actual.is_object()) return false;
    for (const auto& [key, value] : spec.items())
      if (!actual.contains(key) || !json_covers(actual[key], value)) return false;
    return true;
  }
  if (spec.is_array()) {
    if (!actual.is_array() || actual.size() != spec.size()) return false;
    for (size_t i = 0; i < spec.size(); ++i)
      if (!json_covers(actual[i], spec[i])) return false;
    return true;
  }
  return actual == spec;
}

std::string supported_pre_names() {
  std::string names;
  for (const PreSpec& s : pre_specs()) names += (names.empty() ? "" : ", ") + std::string(s.name);
  return names;
}

// Stable identity of the tokenizer (see load_gguf_tokenizer in tokenizer.h): a
// length-prefixed stream of model, pre, tokens with their types, merges, scores.
class MetadataHash {
 public:
  void add(std::string_view s) {
    add_u64(s.size());
    buf_.append(s);
  }
  void add_u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) buf_.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  }
  std::string hex() const { return sha256_hex(std::string_view(buf_)); }

 private:
  std::string buf_;
};

// The id named by tokenizer.ggml.<key>_token_id: -1 when absent, an error when out of range.
int32_t special_id(const GgufFile& g, const char* key, size_t n_tokens) {
  const std::string full = std::string("tokenizer.ggml.") + key + "_token_id";
  if (g.find(full) == nullptr) return -1;
  const int64_t id = g.get_i64(full);
  if (id < 0 || static_cast<uint64_t>(id) >= n_tokens)
    throw Error(g.name(), "'" + full + "' = " + std::to_string(id) + " is outside the vocab of " +
                              std::to_string(n_tokens) + " tokens");
  return static_cast<int32_t>(id);
}

// The tokenizer.json document a "gpt2" GGUF tokenizer stands for.
json gpt2_document(const GgufFile& g, const std::vector<std::string>& tokens, const std::vector<int64_t>& types) {
  // llama.cpp falls back to "default" for files written before tokenizer.ggml.pre existed.
  const std::string pre =
      g.find("tokenizer.ggml.pre") ? g.get_string("tokenizer.ggml.pre") : std::string("default");
  const PreSpec* spec = nullptr;
  const std::vector<PreSpec> specs = pre_specs();
  for (const PreSpec& s : specs)
    if (pre == s.name) spec = &s;
  if (spec == nullptr)
    throw Error(g.name(), "unsupported pre-tokenizer '" + pre + "' (tokenizer.ggml.pre); supported: " +
                              supported_pre_names());
  const std::vector<std::string>& merges = g.get_strings("tokenizer.ggml.merges");

  json vocab = json::object();
  json added = json::array();
  for (size_t i = 0; i < tokens.size(); ++i) {
    vocab[tokens[i]] = i;  // a repeated text keeps its last id, as in transformers/llama.cpp
    const int64_t type = types.empty() ? kNormal : types[i];
    // Control, user-defined and unknown tokens are the ones llama.cpp and HF split out of
    // the input before pre-tokenization; their text is stored raw (not byte-level mapped).
    if ((type == kControl || type == kUserDefined || type == kUnknown) && !tokens[i].empty())
      added.push_back({{"id", i}, {"content", tokens[i]}, {"special", type != kUserDefined},
                       {"single_word", false}, {"lstrip", false}, {"rstrip", false},
                       {"normalized", false}});
  }
  json doc = {{"version", "1.0"},
              {"added_tokens", std::move(added)},
              {"normalizer", spec->normalizer},
              {"pre_tokenizer", spec->pre_tokenizer},
              {"post_processor", nullptr},
              {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", false},
                           {"trim_offsets", true}, {"use_regex", true}}},
              {"model", {{"type", "BPE"}, {"vocab", std::move(vocab)}, {"merges", merges},
                         {"ignore_merges", spec->ignore_merges}, {"fuse_unk", false},
                         {"byte_fallback", false}}}};
  return doc;
}

std::unique_ptr<TokenizerImpl> open_gpt2(const GgufFile& g, const std::vector<std::string>& tokens,
                                         const std::vector<int64_t>& types, MetadataHash& hash) {
  const std::string pre =
      g.find("tokenizer.ggml.pre") ? g.get_string("tokenizer.ggml.pre") : std::string("default");
  const std::vector<std::string>& merges = g.get_strings("tokenizer.ggml.merges");
  const json doc = gpt2_document(g, tokens, types);
  std::unique_ptr<TokenizerImpl> t = make_hf_tokenizer(doc, g.name());

  hash.add(pre);
  hash.add_u64(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    hash.add(tokens[i]);
    hash.add_u64(static_cast<uint64_t>(types.empty() ? kNormal : types[i]));
  }
  hash.add_u64(merges.size());
  for (const std::string& m : merges) hash.add(m);
  return t;
}

// Protobuf wire format, just enough to write sentencepiece's ModelProto: SentencePiece
// can only be built from a serialized model, and GGUF keeps the pieces, not the proto.
class ProtoWriter {
 public:
  void varint(uint32_t field, uint64_t v) {
    tag(field, 0);
    put_varint(v);
  }
  void f32(uint32_t field, float v) {
    tag(field, 5);
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    for (int i = 0; i < 4; ++i) buf_.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
  }
  void bytes(uint32_t field, std::string_view s) {
    tag(field, 2);
    put_varint(s.size());
    buf_.append(s);
  }
  const std::string& str() const { return buf_; }

 private:
  void tag(uint32_t field, int wire) { put_varint((static_cast<uint64_t>(field) << 3) | wire); }
  void put_varint(uint64_t v) {
    for (; v >= 0x80; v >>= 7) buf_.push_back(static_cast<char>((v & 0x7F) | 0x80));
    buf_.push_back(static_cast<char>(v));
  }
  std::string buf_;
};

// tokenizer.ggml.model "llama": the SentencePiece BPE model llama.cpp's converter took the
// pieces from, rebuilt as a ModelProto (field numbers from sentencepiece_model.proto).
// The serialized SentencePiece ModelProto a "llama" GGUF tokenizer stands for.
std::string llama_model_proto(const GgufFile& g, const std::vector<std::string>& tokens,
                              const std::vector<int64_t>& types) {
  const std::vector<double> scores = g.get_f64s("tokenizer.ggml.scores");
  if (scores.size() != tokens.size())
    throw Error(g.name(), "'tokenizer.ggml.scores' has " + std::to_string(scores.size()) +
                              " entries for " + std::to_string(tokens.size()) + " tokens");
  const bool add_space_prefix =
      g.find("tokenizer.ggml.add_space_prefix") ? g.get_bool("tokenizer.ggml.add_space_prefix") : true;
  ProtoWriter model;
  bool byte_fallback = false;
  std::string unk_piece;
  for (size_t i = 0; i < tokens.size(); ++i) {
    int64_t type = types.empty() ? kNormal : types[i];
    if (type == kUndefined) type = kNormal;
    if (type < kNormal || type > kByte)
      throw Error(g.name(), "'tokenizer.ggml.token_type'[" + std::to_string(i) + "] = " +
                                std::to_string(type) + " is not a token type (0-6)");
    byte_fallback = byte_fallback || type == kByte;
    if (type == kUnknown && unk_piece.empty()) unk_piece = tokens[i];
    ProtoWriter piece;
    piece.bytes(1, tokens[i]);
    piece.f32(2, static_cast<float>(scores[i]));
    piece.varint(3, static_cast<uint64_t>(type));
    model.bytes(1, piece.str());  // ModelProto.pieces
  }
  ProtoWriter trainer;
  trainer.varint(3, 2);  // model_type BPE
  trainer.varint(4, tokens.size());
  trainer.varint(35, byte_fallback ? 1 : 0);
  if (!unk_piece.empty()) trainer.bytes(45, unk_piece);
  model.bytes(2, trainer.str());  // ModelProto.trainer_spec
  ProtoWriter normalizer;  // identity: llama.cpp neither maps characters nor drops spaces
  normalizer.bytes(1, "identity");
  normalizer.varint(3, add_space_prefix ? 1 : 0);
  normalizer.varint(4, 0);  // remove_extra_whitespaces
  normalizer.varint(5, 1);  // escape_whitespaces
  model.bytes(3, normalizer.str());  // ModelProto.normalizer_spec
  return model.str();
}

std::unique_ptr<TokenizerImpl> open_llama(const GgufFile& g, const std::vector<std::string>& tokens,
                                          const std::vector<int64_t>& types, MetadataHash& hash) {
  const std::vector<double> scores = g.get_f64s("tokenizer.ggml.scores");
  const bool add_space_prefix =
      g.find("tokenizer.ggml.add_space_prefix") ? g.get_bool("tokenizer.ggml.add_space_prefix") : true;
  std::unique_ptr<TokenizerImpl> t = make_sentencepiece(llama_model_proto(g, tokens, types), g.name());

  hash.add("");  // no pre-tokenizer
  hash.add_u64(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    hash.add(tokens[i]);
    hash.add_u64(static_cast<uint64_t>(types.empty() ? kNormal : types[i]));
    const float f = static_cast<float>(scores[i]);
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    hash.add_u64(bits);
  }
  hash.add_u64(add_space_prefix ? 1 : 0);
  return t;
}

}  // namespace
}  // namespace tok

namespace tok {
namespace {

// tokenizer.ggml.tokens and .token_type, checked against each other.
std::pair<const std::vector<std::string>&, std::vector<int64_t>> tokens_and_types(const GgufFile& gguf) {
  const std::vector<std::string>& tokens = gguf.get_strings("tokenizer.ggml.tokens");
  if (tokens.empty() || tokens.size() > static_cast<size_t>(INT32_MAX))
    throw Error(gguf.name(), "'tokenizer.ggml.tokens' holds " + std::to_string(tokens.size()) +
                                 " tokens (expected 1 to 2^31-1)");
  std::vector<int64_t> types;
  if (gguf.find("tokenizer.ggml.token_type")) {
    types = gguf.get_i64s("tokenizer.ggml.token_type");
    if (types.size() != tokens.size())
      throw Error(gguf.name(), "'tokenizer.ggml.token_type' has " + std::to_string(types.size()) +
                                   " entries for " + std::to_string(tokens.size()) + " tokens");
  }
  return {tokens, std::move(types)};
}

}  // namespace
}  // namespace tok

std::string gguf_pre_of_tokenizer_json(const nlohmann::json& normalizer, const nlohmann::json& pre_tokenizer) {
  // llama.cpp's own names, one per distinct pre-tokenizer (the others are aliases).
  for (const char* name : {"gpt-2", "smollm", "llama-bpe", "qwen2"})
    for (const tok::PreSpec& s : tok::pre_specs())
      if (s.name == std::string_view(name) && tok::json_covers(pre_tokenizer, s.pre_tokenizer) &&
          (s.normalizer.is_null() ? normalizer.is_null() : tok::json_covers(normalizer, s.normalizer)))
        return name;
  return "";
}

GgufTokenizerFiles gguf_tokenizer_files(const GgufFile& gguf) {
  const std::string& model = gguf.get_string("tokenizer.ggml.model");
  auto [tokens, types] = tok::tokens_and_types(gguf);
  auto tokenizer = load_gguf_tokenizer(gguf);  // validates everything and decides BOS policy
  GgufTokenizerFiles files;
  if (model == "gpt2")
    files.tokenizer_json = tok::gpt2_document(gguf, tokens, types);
  else
    files.sentencepiece_model = tok::llama_model_proto(gguf, tokens, types);
  auto text = [&](int32_t id) { return id >= 0 ? nlohmann::json(tokens[static_cast<size_t>(id)]) : nlohmann::json(); };
  files.tokenizer_config = {{"add_bos_token", tokenizer->add_bos()}, {"add_eos_token", false},
                            {"bos_token", text(tokenizer->bos_id())}, {"eos_token", text(tokenizer->eos_id())},
                            {"clean_up_tokenization_spaces", false},
                            {"tokenizer_class", model == "gpt2" ? "PreTrainedTokenizerFast" : "LlamaTokenizer"}};
  return files;
}

std::unique_ptr<Tokenizer> load_gguf_tokenizer(const GgufFile& gguf) {
  using namespace tok;
  const std::string& model = gguf.get_string("tokenizer.ggml.model");
  auto [tokens, types] = tokens_and_types(gguf);
  MetadataHash hash;
  hash.add("fsq-gguf-tokenizer-v1");
  hash.add(model);
  std::unique_ptr<TokenizerImpl> t;
  bool add_bos = false;
  if (model == "gpt2") {
    t = open_gpt2(gguf, tokens, types, hash);
    // llama.cpp's BPE default: only Llama-3 style files add BOS unless the file says.
    const std::string pre = gguf.find("tokenizer.ggml.pre") ? gguf.get_string("tokenizer.ggml.pre") : "";
    add_bos = pre == "llama-bpe" || pre == "llama3";
  } else if (model == "llama") {
    t = open_llama(gguf, tokens, types, hash);
    add_bos = true;
  } else {
    throw Error(gguf.name(), "unsupported tokenizer.ggml.model '" + model + "' (supported: gpt2, llama)");
  }
  if (gguf.find("tokenizer.ggml.add_bos_token")) add_bos = gguf.get_bool("tokenizer.ggml.add_bos_token");
  // Absent ids fall back to the tokenizer's own (SentencePiece's "<s>"/"</s>"; none for BPE).
  const int32_t bos = special_id(gguf, "bos", tokens.size()), eos = special_id(gguf, "eos", tokens.size());
  t->set_special(bos >= 0 ? bos : t->bos_id(), eos >= 0 ? eos : t->eos_id(), add_bos);
  t->set_sha256(hash.hex());
  return t;
}

}  // namespace fsq
