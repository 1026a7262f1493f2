// Compiled PCRE2 regex (UTF + UCP, JIT when available) with the find-all iteration the
// Hugging Face pre-tokenizers use. Input must be valid UTF-8 (checked once by the caller).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fsq::tok {

using Span = std::pair<size_t, size_t>;  // [begin, end) byte offsets

class Regex {
 public:
  // Throws fsq::Error(where, ...) with PCRE2's message and offset when `pattern` is invalid.
  Regex(const std::string& pattern, const std::string& where);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Non-overlapping matches left to right; after an empty match the search resumes one
  // code point later (as Rust regex iterators do).
  std::vector<Span> find_all(std::string_view text) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fsq::tok
