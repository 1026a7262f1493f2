// Internals shared by the tokenizer implementations and load_tokenizer (not installed API).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "common/error.h"
#include "formats/tokenizer.h"

namespace fsq::tok {

// A valid tokenizer file that uses a feature fsq does not implement (e.g. a WordPiece model
// or a Metaspace pre-tokenizer). load_tokenizer falls back to tokenizer.model on it.
class UnsupportedTokenizer : public Error {
 public:
  using Error::Error;
};

// What load_tokenizer needs beyond the public interface: piece lookup for the special
// tokens named in tokenizer_config.json, and a way to apply them.
class TokenizerImpl : public Tokenizer {
 public:
  // Id of a piece / added token with exactly this text, or -1.
  virtual int32_t token_to_id(std::string_view token) const = 0;
  // Whether `id` names a token (tokenizer.json vocabularies may skip ids).
  virtual bool has_id(int32_t id) const { return id >= 0 && id < vocab_size(); }
  void set_special(int32_t bos, int32_t eos, bool add_bos) {
    bos_id_ = bos;
    eos_id_ = eos;
    add_bos_ = add_bos;
  }
  void set_sha256(std::string hex) { sha256_ = std::move(hex); }
};

std::unique_ptr<TokenizerImpl> open_sentencepiece(const std::filesystem::path& path);
// A SentencePiece model from a serialized ModelProto (sha256 is left to the caller).
std::unique_ptr<TokenizerImpl> make_sentencepiece(const std::string& model_proto,
                                                  const std::filesystem::path& source);
std::unique_ptr<TokenizerImpl> open_hf_tokenizer_json(const std::filesystem::path& path);
// The same from a tokenizer.json document already in memory (GGUF metadata is rebuilt as
// one); `source` names it in errors and becomes path(). sha256 is left to the caller.
std::unique_ptr<TokenizerImpl> make_hf_tokenizer(const nlohmann::json& j,
                                                 const std::filesystem::path& source);

// One-line rendering of a library message (nlohmann/PCRE2 text may hold newlines).
std::string one_line(std::string text);

}  // namespace fsq::tok
