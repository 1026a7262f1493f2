// Token ids read from tokenizer files (tokenizer.json vocab and added_tokens, also the
// tokenizer.json fsq rebuilds from GGUF metadata), validated before anything is sized by
// them: an id-indexed table sized by a hostile id (4000000000, 2^40) would be a
// std::bad_alloc, not an error naming the file.
//
// The rule: an id is an integer in [0, limit), limit = 2 x (tokens the file defines) + 65536,
// where the tokens defined are the vocab entries plus the added tokens. Real vocabularies are
// dense or nearly so (ids 0..n-1, added tokens right after, a few reserved gaps); the bound
// leaves room for any of those and keeps id tables to a small multiple of the file's size.
// One id names one token: a second, different token with the same id is refused, both named.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include <nlohmann/json_fwd.hpp>

namespace fsq::tok {

// The exclusive upper bound on ids of a file defining `defined_tokens` tokens (see above).
int64_t token_id_limit(int64_t defined_tokens);

class TokenIds {
 public:
  // `where` names the file in errors; `defined_tokens` sets limit().
  TokenIds(std::string where, int64_t defined_tokens);

  int64_t limit() const { return limit_; }

  // The id `value` gives `what` (e.g. "model.vocab['a']"): throws fsq::Error naming the file,
  // `what`, the value and the rule unless it is an integer in [0, limit()).
  int32_t parse(const nlohmann::json& value, const std::string& what) const;
  // The same check for an id already read as a number.
  int32_t check(int64_t id, const std::string& what) const;

  // Records that `id` names `token` (`what` says where the file gives it). Throws fsq::Error
  // naming both tokens when the id already names a different token; the same token twice
  // (an added token repeating its vocab entry) is fine.
  void claim(int32_t id, const std::string& token, const std::string& what);

  // The token `id` names, or nullptr.
  const std::string* token(int32_t id) const;

 private:
  [[noreturn]] void fail(const std::string& what, const std::string& shown) const;

  struct Claim {
    std::string token, what;
  };
  std::string where_;
  int64_t defined_;
  int64_t limit_;
  std::unordered_map<int32_t, Claim> claims_;
};

}  // namespace fsq::tok
