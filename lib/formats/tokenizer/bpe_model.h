// The tokenizers BPE model: vocab, ranked merges, and the rank-ordered merge of one word.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace fsq::tok {

class TokenIds;

// Hashes std::string and std::string_view alike so lookups need no temporary string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using Vocab = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

class BpeModel {
 public:
  // From tokenizer.json's "model" object (type BPE). Every vocab id is checked and claimed
  // in `ids` (token_id.h). Throws fsq::Error(where, ...) for a malformed vocab, a missing or
  // malformed merges list, UnsupportedTokenizer for other model types.
  BpeModel(const nlohmann::json& model, const std::string& where, TokenIds& ids);

  // Appends the ids of one pre-tokenized word (already byte-level mapped when applicable).
  void encode_word(std::string_view word, std::vector<int32_t>& ids) const;

  int32_t token_to_id(std::string_view token) const;  // -1 when absent
  const std::string* id_to_token(int32_t id) const;   // nullptr when absent
  int32_t max_id() const { return static_cast<int32_t>(tokens_.size()) - 1; }

 private:
  struct Merge {
    int32_t rank;
    int32_t new_id;
  };
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  const Merge* find_merge(int32_t a, int32_t b) const {
    auto it = merges_.find(pair_key(a, b));
    return it == merges_.end() ? nullptr : &it->second;
  }
  void initial_symbols(std::string_view word, std::vector<int32_t>& ids) const;

  Vocab vocab_;
  std::vector<std::string> tokens_;  // id -> token ("" for ids the vocab skips)
  std::vector<bool> has_token_;
  std::unordered_map<uint64_t, Merge> merges_;
  int32_t unk_id_ = -1;
  int32_t byte_ids_[256];  // "<0xXX>" ids for byte_fallback, -1 when absent
  std::string prefix_, suffix_;  // continuing_subword_prefix, end_of_word_suffix
  bool byte_fallback_ = false;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
};

}  // namespace fsq::tok
