// UTF-8 helpers shared by the tokenizers: code point iteration, encoding (validation is
// common/utf8.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/utf8.h"  // find_invalid_utf8

namespace fsq::tok {

// Decodes the code point at s[i] (s must be valid UTF-8) and advances i past it.
char32_t next_code_point(std::string_view s, size_t& i);

// Byte length of the UTF-8 sequence that starts with lead byte `c`.
inline size_t utf8_length(unsigned char c) {
  return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

void append_utf8(std::string& out, char32_t cp);

// Unicode White_Space (what Rust's char::is_whitespace tests; HF uses it for lstrip/rstrip).
bool is_unicode_whitespace(char32_t cp);

}  // namespace fsq::tok
