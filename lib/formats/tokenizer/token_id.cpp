#include "formats/tokenizer/token_id.h"

#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

#include "common/error.h"

namespace fsq::tok {
namespace {

constexpr int64_t kSlack = 65536;  // reserved/special ids past a small vocabulary

}  // namespace

int64_t token_id_limit(int64_t defined_tokens) {
  // Capped at 2^31 - 1 (ids are int32); a file can only define what it holds, so the
  // product cannot overflow int64.
  const int64_t limit = 2 * defined_tokens + kSlack;
  return std::min<int64_t>(limit, std::numeric_limits<int32_t>::max());
}

TokenIds::TokenIds(std::string where, int64_t defined_tokens)
    : where_(std::move(where)), defined_(defined_tokens), limit_(token_id_limit(defined_tokens)) {}

void TokenIds::fail(const std::string& what, const std::string& shown) const {
  throw Error(where_, what + " = " + shown + " is not a valid token id (ids must be integers in [0, " +
                          std::to_string(limit_) + "): below 2 x the " + std::to_string(defined_) +
                          " tokens defined + 65536)");
}

int32_t TokenIds::check(int64_t id, const std::string& what) const {
  if (id < 0 || id >= limit_) fail(what, std::to_string(id));
  return static_cast<int32_t>(id);
}

int32_t TokenIds::parse(const nlohmann::json& value, const std::string& what) const {
  if (value.is_number_unsigned()) {
    const auto u = value.get<uint64_t>();
    if (u >= static_cast<uint64_t>(limit_)) fail(what, std::to_string(u));
    return static_cast<int32_t>(u);
  }
  if (value.is_number_integer()) return check(value.get<int64_t>(), what);
  throw Error(where_, what + " is not a non-negative integer id (got " + value.dump().substr(0, 40) + ")");
}

void TokenIds::claim(int32_t id, const std::string& token, const std::string& what) {
  auto [it, inserted] = claims_.try_emplace(id, Claim{token, what});
  if (inserted || it->second.token == token) return;
  throw Error(where_, "token id " + std::to_string(id) + " is given to two tokens: " + quote_name(it->second.token) +
                          " (" + it->second.what + ") and " + quote_name(token) + " (" + what + ")");
}

const std::string* TokenIds::token(int32_t id) const {
  auto it = claims_.find(id);
  return it == claims_.end() ? nullptr : &it->second.token;
}

}  // namespace fsq::tok
