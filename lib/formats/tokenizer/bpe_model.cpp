#include "formats/tokenizer/bpe_model.h"

#include <cstdio>
#include <queue>

#include <nlohmann/json.hpp>

#include "formats/tokenizer/token_id.h"
#include "formats/tokenizer/tokenizer_impl.h"
#include "formats/tokenizer/utf8.h"

namespace fsq::tok {
namespace {

std::string optional_string(const nlohmann::json& model, const char* key) {
  auto it = model.find(key);
  return it != model.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool optional_bool(const nlohmann::json& model, const char* key) {
  auto it = model.find(key);
  return it != model.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace

BpeModel::BpeModel(const nlohmann::json& model, const std::string& where, TokenIds& ids) {
  if (!model.is_object()) throw Error(where, "'model' is not an object");
  const std::string type = model.value("type", std::string("BPE"));
  if (type != "BPE") throw UnsupportedTokenizer(where, "unsupported model type '" + type + "'");
  const auto vocab = model.find("vocab");
  if (vocab == model.end() || !vocab->is_object())
    throw Error(where, "model.vocab is missing or not an object");
  for (const auto& [token, id] : vocab->items()) {
    const std::string what = "model.vocab[" + quote_name(token) + "]";
    const int32_t i = ids.parse(id, what);  // bounded: tokens_ below is sized by it
    ids.claim(i, token, what);
    vocab_.emplace(token, i);
    if (static_cast<size_t>(i) >= tokens_.size()) {
      tokens_.resize(i + 1);
      has_token_.resize(i + 1, false);
    }
    tokens_[i] = token;
    has_token_[i] = true;
  }

  prefix_ = optional_string(model, "continuing_subword_prefix");
  suffix_ = optional_string(model, "end_of_word_suffix");
  byte_fallback_ = optional_bool(model, "byte_fallback");
  fuse_unk_ = optional_bool(model, "fuse_unk");
  ignore_merges_ = optional_bool(model, "ignore_merges");
  const std::string unk = optional_string(model, "unk_token");
  if (!unk.empty()) {
    unk_id_ = token_to_id(unk);
    if (unk_id_ < 0) throw Error(where, "model.unk_token '" + unk + "' is not in the vocab");
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    byte_ids_[b] = token_to_id(name);
  }

  const auto merges = model.find("merges");
  // Without merges every word would be encoded character by character: never what a model
  // was trained on, so a missing list is an error (an empty one is taken as written).
  if (merges == model.end() || merges->is_null())
    throw Error(where, "model.merges is missing (a BPE model needs its merge list; without it every word would be "
                       "split into single characters)");
  if (!merges->is_array()) throw Error(where, "model.merges is not a list");
  int32_t rank = 0;
  for (const auto& m : *merges) {
    // Two spellings: "a b" (older files) and ["a", "b"] (tokenizers >= 0.20).
    std::string a, b;
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        throw Error(where, "merge " + std::to_string(rank) + " '" + s + "' is not two tokens");
      a = s.substr(0, sp), b = s.substr(sp + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      a = m[0].get<std::string>(), b = m[1].get<std::string>();
    } else {
      throw Error(where, "merge " + std::to_string(rank) + " is neither \"a b\" nor [a, b]");
    }
    const std::string merged = a + b.substr(std::min(prefix_.size(), b.size()));
    for (const std::string* t : std::initializer_list<const std::string*>{&a, &b, &merged})
      if (token_to_id(*t) < 0)
        throw Error(where, "merge " + std::to_string(rank) + " ('" + a + "' '" + b +
                               "') needs token '" + *t + "' that is not in the vocab");
    // Like tokenizers' HashMap collect: a repeated pair keeps its last rank.
    merges_.insert_or_assign(pair_key(token_to_id(a), token_to_id(b)),
                             Merge{rank, token_to_id(merged)});
    ++rank;
  }
}

int32_t BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(token);
  return it == vocab_.end() ? -1 : it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= tokens_.size() || !has_token_[id]) return nullptr;
  return &tokens_[id];
}

// One symbol per character; characters missing from the vocab become byte tokens
// (byte_fallback), the unknown token (fused when fuse_unk), or vanish, as in tokenizers.
void BpeModel::initial_symbols(std::string_view word, std::vector<int32_t>& ids) const {
  std::string buf;
  bool last_was_unk = false;
  for (size_t i = 0; i < word.size();) {
    const size_t begin = i;
    i += utf8_length(static_cast<unsigned char>(word[i]));
    const std::string_view ch = word.substr(begin, i - begin);
    std::string_view piece = ch;
    if ((!prefix_.empty() && begin > 0) || (!suffix_.empty() && i >= word.size())) {
      buf.assign(begin > 0 ? prefix_ : std::string());
      buf.append(ch);
      if (i >= word.size()) buf += suffix_;
      piece = buf;
    }
    if (const int32_t id = token_to_id(piece); id >= 0) {
      ids.push_back(id);
      last_was_unk = false;
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (char c : ch) all = all && byte_ids_[static_cast<unsigned char>(c)] >= 0;
      if (all) {
        for (char c : ch) ids.push_back(byte_ids_[static_cast<unsigned char>(c)]);
        last_was_unk = false;
        continue;
      }
    }
    if (unk_id_ >= 0) {
      if (!(fuse_unk_ && last_was_unk)) ids.push_back(unk_id_);
      last_was_unk = true;
    }
  }
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (ignore_merges_) {
    if (const int32_t id = token_to_id(word); id >= 0) {
      out.push_back(id);
      return;
    }
  }
  std::vector<int32_t> id;
  initial_symbols(word, id);
  const int n = static_cast<int>(id.size());
  if (n < 2) {
    out.insert(out.end(), id.begin(), id.end());
    return;
  }
  // Doubly linked symbols; a min-heap of candidate merges ordered by (rank, position), so
  // the lowest-ranked pair merges first and ties go to the leftmost, as in tokenizers.
  std::vector<int> prev(n), next(n);
  std::vector<bool> alive(n, true);
  for (int i = 0; i < n; ++i) prev[i] = i - 1, next[i] = i + 1 < n ? i + 1 : -1;
  struct Cand {
    int32_t rank;
    int pos;
    int32_t new_id;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Cand, std::vector<Cand>, std::greater<>> heap;
  auto push = [&](int pos) {
    if (pos < 0 || next[pos] < 0) return;
    if (const Merge* m = find_merge(id[pos], id[next[pos]])) heap.push({m->rank, pos, m->new_id});
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    if (!alive[c.pos] || next[c.pos] < 0) continue;
    const Merge* m = find_merge(id[c.pos], id[next[c.pos]]);
    if (m == nullptr || m->rank != c.rank || m->new_id != c.new_id) continue;  // stale
    const int right = next[c.pos];
    id[c.pos] = c.new_id;
    alive[right] = false;
    next[c.pos] = next[right];
    if (next[c.pos] >= 0) prev[next[c.pos]] = c.pos;
    push(prev[c.pos]);
    push(c.pos);
  }
  for (int i = 0; i >= 0; i = next[i]) out.push_back(id[i]);
}

}  // namespace fsq::tok
