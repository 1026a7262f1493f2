// tokenizer.json "added_tokens": found in the input before anything else and emitted as
// their ids (leftmost-longest match, lstrip/rstrip/single_word as in tokenizers).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace fsq::tok {

class TokenIds;

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false, lstrip = false, rstrip = false, single_word = false, normalized = false;
};

// A piece of input: text still to be tokenized (id < 0), or one added token.
struct Segment {
  size_t begin, end;
  int32_t id;
};

class AddedTokens {
 public:
  // `vocab_id` gives the model's id for a token text (-1 when absent): like tokenizers, an
  // added token whose text the model already has takes the model's id. Every id the file
  // gives is checked in `ids` (token_id.h), and the id each token ends up with is claimed
  // there (an added token may not reuse the id of a different vocab or added token).
  AddedTokens(const nlohmann::json& config, const std::string& where,
              const std::function<int32_t(std::string_view)>& vocab_id, TokenIds& ids);

  // Splits `text` on the added tokens whose `normalized` flag equals `normalized`
  // (tokenizers matches those before normalization, the others after). Segments cover text.
  void split(std::string_view text, bool normalized, std::vector<Segment>& out) const;

  const std::vector<AddedToken>& tokens() const { return tokens_; }
  const AddedToken* find(std::string_view content) const;
  const AddedToken* find(int32_t id) const;

 private:
  std::vector<AddedToken> tokens_;
  // Per first byte, indices into tokens_ sorted longest first (leftmost-longest match).
  std::vector<std::vector<size_t>> by_first_byte_[2];
};

}  // namespace fsq::tok
