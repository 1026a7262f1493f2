#include "formats/tokenizer/pretokenizer.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "formats/tokenizer/regex.h"
#include "formats/tokenizer/tokenizer_impl.h"
#include "formats/tokenizer/utf8.h"

namespace fsq::tok {

// GPT-2's pre-tokenization regex, used by ByteLevel when use_regex is set.
static const char* const kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// What a Split step looks for: a regex, a literal string, or single whitespace characters.
struct Pattern {
  std::unique_ptr<Regex> regex;
  std::string literal;
  bool whitespace_chars = false;

  std::vector<Span> matches(std::string_view s) const {
    if (regex) return regex->find_all(s);
    std::vector<Span> out;
    if (whitespace_chars) {
      for (size_t i = 0; i < s.size();) {
        const size_t b = i;
        if (is_unicode_whitespace(next_code_point(s, i))) out.emplace_back(b, i);
      }
    } else if (!literal.empty()) {
      for (size_t p = s.find(literal); p != std::string_view::npos;
           p = s.find(literal, p + literal.size()))
        out.emplace_back(p, p + literal.size());
    }
    return out;
  }
};

struct PreTokenizer::Step {
  bool is_byte_level = false;
  bool add_prefix_space = false;  // ByteLevel
  Pattern pattern;                // Split (ByteLevel with use_regex: the GPT-2 regex)
  Behavior behavior = Behavior::Isolated;
  bool invert = false;

  void apply(const std::string& piece, std::vector<std::string>& out) const;
};

// tokenizers' NormalizedString::split: the pattern's matches and the gaps between them
// cover the piece; `behavior` decides which parts survive and what merges with what.
void PreTokenizer::Step::apply(const std::string& piece, std::vector<std::string>& out) const {
  std::vector<std::pair<Span, bool>> parts;  // (span, is_match)
  size_t prev = 0;
  for (const Span& m : pattern.matches(piece)) {
    if (prev != m.first) parts.push_back({{prev, m.first}, false});
    parts.push_back({m, true});
    prev = m.second;
  }
  if (prev != piece.size()) parts.push_back({{prev, piece.size()}, false});
  if (invert)
    for (auto& p : parts) p.second = !p.second;

  std::vector<std::pair<Span, bool>> kept;  // (span, remove)
  bool previous_match = false;
  switch (behavior) {
    case Behavior::Removed:
      kept = parts;
      break;
    case Behavior::Isolated:
      for (auto& p : parts) kept.push_back({p.first, false});
      break;
    case Behavior::Contiguous:
      for (auto& [span, is_match] : parts) {
        if (is_match == previous_match && !kept.empty())
          kept.back().first.second = span.second;
        else
          kept.push_back({span, false});
        previous_match = is_match;
      }
      break;
    case Behavior::MergedWithPrevious:
      for (auto& [span, is_match] : parts) {
        if (is_match && !previous_match && !kept.empty())
          kept.back().first.second = span.second;
        else
          kept.push_back({span, false});
        previous_match = is_match;
      }
      break;
    case Behavior::MergedWithNext:
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (it->second && !previous_match && !kept.empty())
          kept.back().first.first = it->first.first;
        else
          kept.push_back({it->first, false});
        previous_match = it->second;
      }
      std::reverse(kept.begin(), kept.end());
      break;
  }
  for (auto& [span, remove] : kept)
    if (!remove && span.second > span.first)
      out.emplace_back(piece, span.first, span.second - span.first);
}

namespace {

Behavior parse_behavior(const nlohmann::json& j, const std::string& where) {
  const std::string b = j.is_string() ? j.get<std::string>() : "";
  if (b == "Removed") return Behavior::Removed;
  if (b == "Isolated") return Behavior::Isolated;
  if (b == "MergedWithPrevious") return Behavior::MergedWithPrevious;
  if (b == "MergedWithNext") return Behavior::MergedWithNext;
  if (b == "Contiguous") return Behavior::Contiguous;
  throw Error(where, "unknown Split behavior " + j.dump());
}

bool flag(const nlohmann::json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

using Steps = std::vector<std::unique_ptr<PreTokenizer::Step>>;

void parse(const nlohmann::json& j, const std::string& where, Steps& steps) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    throw Error(where, "pre_tokenizer without a type: " + j.dump().substr(0, 80));
  const std::string type = j["type"].get<std::string>();
  if (type == "Sequence") {
    if (!j.contains("pretokenizers") || !j["pretokenizers"].is_array())
      throw Error(where, "Sequence pre_tokenizer without a 'pretokenizers' list");
    for (const auto& sub : j["pretokenizers"]) parse(sub, where, steps);
    return;
  }
  if (!steps.empty() && steps.back()->is_byte_level)
    throw UnsupportedTokenizer(where, "pre_tokenizer " + type + " after ByteLevel is not supported");
  auto step = std::make_unique<PreTokenizer::Step>();
  if (type == "ByteLevel") {
    step->is_byte_level = true;
    step->add_prefix_space = flag(j, "add_prefix_space", true);
    if (flag(j, "use_regex", true)) step->pattern.regex = std::make_unique<Regex>(kGpt2Pattern, where);
  } else if (type == "Split") {
    const auto pat = j.find("pattern");
    if (pat == j.end() || !pat->is_object())
      throw Error(where, "Split pre_tokenizer without a pattern");
    if (pat->contains("Regex") && (*pat)["Regex"].is_string())
      step->pattern.regex = std::make_unique<Regex>((*pat)["Regex"].get<std::string>(), where);
    else if (pat->contains("String") && (*pat)["String"].is_string())
      step->pattern.literal = (*pat)["String"].get<std::string>();
    else
      throw Error(where, "Split pattern must be {\"Regex\": ...} or {\"String\": ...}");
    step->behavior = parse_behavior(j.value("behavior", nlohmann::json()), where);
    step->invert = flag(j, "invert", false);
  } else if (type == "Digits") {
    // tokenizers splits on char::is_numeric (\p{N}); runs stay together unless individual.
    const bool individual = flag(j, "individual_digits", false);
    step->pattern.regex = std::make_unique<Regex>(individual ? R"(\p{N})" : R"(\p{N}+)", where);
  } else if (type == "Whitespace") {
    step->pattern.regex = std::make_unique<Regex>(R"(\w+|[^\w\s]+)", where);
    step->behavior = Behavior::Removed;
    step->invert = true;
  } else if (type == "WhitespaceSplit") {
    step->pattern.whitespace_chars = true;
    step->behavior = Behavior::Removed;
  } else {
    throw UnsupportedTokenizer(where, "unsupported pre_tokenizer type '" + type + "'");
  }
  steps.push_back(std::move(step));
}

}  // namespace

PreTokenizer::PreTokenizer(const nlohmann::json& config, const std::string& where) {
  if (!config.is_null()) parse(config, where, steps_);
  for (const auto& s : steps_) byte_level_ = byte_level_ || s->is_byte_level;
}

PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;

void PreTokenizer::split(std::string_view segment, std::vector<std::string>& words) const {
  if (segment.empty()) return;  // tokenizers drops empty splits before pre-tokenizing
  std::vector<std::string> pieces{std::string(segment)}, next;
  for (const auto& step : steps_) {
    next.clear();
    for (std::string& piece : pieces) {
      // ByteLevel prefixes every piece that reaches it, before its own regex split.
      if (step->is_byte_level && step->add_prefix_space && piece.rfind(' ', 0) != 0)
        piece.insert(piece.begin(), ' ');
      if (step->is_byte_level && !step->pattern.regex)
        next.push_back(std::move(piece));
      else
        step->apply(piece, next);
    }
    pieces.swap(next);
  }
  for (std::string& p : pieces)
    if (!p.empty()) words.push_back(std::move(p));
}

}  // namespace fsq::tok
