#include "formats/tokenizer/added_tokens.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "formats/tokenizer/token_id.h"
#include "formats/tokenizer/utf8.h"

namespace fsq::tok {
namespace {

// tokenizers' single_word test: a letter, digit or '_' next to the match blocks it.
// Non-ASCII code points count as word characters (the common case: letters).
bool is_word_byte(unsigned char c) {
  return c >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
         (c >= 'A' && c <= 'Z') || c == '_';
}

size_t strip_left(std::string_view s, size_t start, size_t floor) {
  // Walk back over whitespace code points (continuation bytes are skipped to the lead).
  while (start > floor) {
    size_t b = start - 1;
    while (b > floor && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
    size_t i = b;
    if (!is_unicode_whitespace(next_code_point(s, i))) break;
    start = b;
  }
  return start;
}

size_t strip_right(std::string_view s, size_t stop) {
  while (stop < s.size()) {
    size_t i = stop;
    if (!is_unicode_whitespace(next_code_point(s, i))) break;
    stop = i;
  }
  return stop;
}

}  // namespace

AddedTokens::AddedTokens(const nlohmann::json& config, const std::string& where,
                         const std::function<int32_t(std::string_view)>& vocab_id, TokenIds& ids) {
  by_first_byte_[0].resize(256);
  by_first_byte_[1].resize(256);
  if (config.is_null()) return;
  if (!config.is_array()) throw Error(where, "added_tokens is not a list");
  for (size_t k = 0; k < config.size(); ++k) {
    const nlohmann::json& t = config[k];
    const std::string what = "added_tokens[" + std::to_string(k) + "]";
    if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer() ||
        !t.contains("content") || !t["content"].is_string())
      throw Error(where, "added token without an integer id and a content string: " +
                             t.dump().substr(0, 80));
    AddedToken a;
    a.content = t["content"].get<std::string>();
    a.id = ids.parse(t["id"], what + ".id");
    a.special = t.value("special", false);
    a.lstrip = t.value("lstrip", false);
    a.rstrip = t.value("rstrip", false);
    a.single_word = t.value("single_word", false);
    a.normalized = t.value("normalized", !a.special);
    if (a.content.empty()) throw Error(where, what + " has empty content");
    if (const int32_t model_id = vocab_id(a.content); model_id >= 0) a.id = model_id;
    if (find_invalid_utf8(a.content) != std::string_view::npos)
      throw Error(where, "added token " + std::to_string(a.id) + " is not valid UTF-8");
    ids.claim(a.id, a.content, what);
    tokens_.push_back(std::move(a));
  }
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const AddedToken& a = tokens_[i];
    by_first_byte_[a.normalized][static_cast<unsigned char>(a.content[0])].push_back(i);
  }
  for (auto& table : by_first_byte_)
    for (auto& list : table)
      std::stable_sort(list.begin(), list.end(), [&](size_t x, size_t y) {
        return tokens_[x].content.size() > tokens_[y].content.size();
      });
}

void AddedTokens::split(std::string_view text, bool normalized, std::vector<Segment>& out) const {
  const auto& table = by_first_byte_[normalized];
  size_t start_offset = 0;  // end of the last emitted token
  for (size_t pos = 0; pos < text.size();) {
    const AddedToken* hit = nullptr;
    for (size_t idx : table[static_cast<unsigned char>(text[pos])]) {
      const std::string& c = tokens_[idx].content;
      if (text.compare(pos, c.size(), c) == 0) {
        hit = &tokens_[idx];
        break;
      }
    }
    if (hit == nullptr) {
      ++pos;
      continue;
    }
    size_t start = pos, stop = pos + hit->content.size();
    pos = stop;
    if (hit->single_word && ((start > 0 && is_word_byte(text[start - 1])) ||
                             (stop < text.size() && is_word_byte(text[stop]))))
      continue;
    if (hit->lstrip) start = strip_left(text, start, start_offset);
    if (hit->rstrip) stop = pos = strip_right(text, stop);
    if (start_offset < start) out.push_back({start_offset, start, -1});
    out.push_back({start, stop, hit->id});
    start_offset = stop;
  }
  if (start_offset < text.size()) out.push_back({start_offset, text.size(), -1});
}

const AddedToken* AddedTokens::find(std::string_view content) const {
  for (const AddedToken& a : tokens_)
    if (a.content == content) return &a;
  return nullptr;
}

const AddedToken* AddedTokens::find(int32_t id) const {
  for (const AddedToken& a : tokens_)
    if (a.id == id) return &a;
  return nullptr;
}

}  // namespace fsq::tok
