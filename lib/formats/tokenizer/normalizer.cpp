#include "formats/tokenizer/normalizer.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/tokenizer/tokenizer_impl.h"
#include "formats/tokenizer/utf8.h"

namespace fsq::tok {
namespace {

struct CccRange {
  char32_t first, last;
  uint8_t ccc;
};
struct Decomposition {
  char32_t cp, first, second;  // second == 0: singleton
  bool recomposes;
};
#include "formats/tokenizer/nfc_tables.inc"

// Hangul syllables decompose and compose arithmetically (Unicode ch. 3.12).
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
                   kSCount = kLCount * kNCount;

uint8_t ccc(char32_t cp) {
  if (cp < 0x300) return 0;
  auto it = std::upper_bound(std::begin(kCccRanges), std::end(kCccRanges), cp,
                             [](char32_t c, const CccRange& r) { return c < r.first; });
  if (it == std::begin(kCccRanges)) return 0;
  --it;
  return cp <= it->last ? it->ccc : 0;
}

const Decomposition* find_decomposition(char32_t cp) {
  auto it = std::lower_bound(std::begin(kDecompositions), std::end(kDecompositions), cp,
                             [](const Decomposition& d, char32_t c) { return d.cp < c; });
  return it != std::end(kDecompositions) && it->cp == cp ? &*it : nullptr;
}

void decompose(char32_t cp, std::vector<char32_t>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const char32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
    return;
  }
  const Decomposition* d = cp < 0xC0 ? nullptr : find_decomposition(cp);
  if (d == nullptr) {
    out.push_back(cp);
    return;
  }
  decompose(d->first, out);
  if (d->second != 0) decompose(d->second, out);
}

// Primary composite of (a, b), or 0.
char32_t compose(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount)
    return a + (b - kTBase);
  static const auto* pairs = [] {
    auto* m = new std::unordered_map<uint64_t, char32_t>;
    for (const Decomposition& d : kDecompositions)
      if (d.recomposes) (*m)[(static_cast<uint64_t>(d.first) << 32) | d.second] = d.cp;
    return m;
  }();
  auto it = pairs->find((static_cast<uint64_t>(a) << 32) | b);
  return it == pairs->end() ? 0 : it->second;
}

}  // namespace

std::string nfc(std::string_view text) {
  // Every code point below U+0300 is stable under NFC: bytes < 0xCC cover exactly those.
  if (std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0xCC; }))
    return std::string(text);
  std::vector<char32_t> cps;
  cps.reserve(text.size());
  for (size_t i = 0; i < text.size();) decompose(next_code_point(text, i), cps);
  // Canonical ordering: stable sort of each run of non-starters by combining class.
  for (size_t i = 0; i < cps.size();) {
    if (ccc(cps[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < cps.size() && ccc(cps[j]) != 0) ++j;
    std::stable_sort(cps.begin() + i, cps.begin() + j,
                     [](char32_t a, char32_t b) { return ccc(a) < ccc(b); });
    i = j;
  }
  // Canonical composition (UAX #15): combine with the last starter unless blocked.
  std::vector<char32_t> out;
  out.reserve(cps.size());
  size_t starter = SIZE_MAX;
  int last_class = -1;
  for (char32_t c : cps) {
    const int cls = ccc(c);
    // Not blocked: adjacent to the starter, or every mark in between has a lower class.
    if (starter != SIZE_MAX && (last_class == 0 || last_class < cls)) {
      if (const char32_t comp = compose(out[starter], c); comp != 0) {
        out[starter] = comp;
        continue;
      }
    }
    if (cls == 0) starter = out.size();
    last_class = cls;
    out.push_back(c);
  }
  std::string result;
  result.reserve(text.size());
  for (char32_t c : out) append_utf8(result, c);
  return result;
}

Normalizer::Normalizer(const nlohmann::json& config, const std::string& where) {
  if (config.is_null()) return;
  const std::string type = config.is_object() ? config.value("type", std::string()) : "";
  if (type == "NFC") {
    nfc_ = true;
  } else if (type == "Sequence" && config.contains("normalizers") &&
             config["normalizers"].is_array()) {
    for (const auto& sub : config["normalizers"]) nfc_ = Normalizer(sub, where).nfc_ || nfc_;
  } else {
    throw UnsupportedTokenizer(where, "unsupported normalizer type '" + type + "'");
  }
}

}  // namespace fsq::tok
