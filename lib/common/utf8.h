// UTF-8 validation, for headers, tokenizer files and the text fsq reads as data.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace fsq {

// Offset of the first invalid byte, or npos when `s` is valid UTF-8 (no surrogates,
// no overlong forms, nothing above U+10FFFF).
size_t find_invalid_utf8(std::string_view s);

// Refuses what is not text before it is tokenized and scored: throws fsq::Error naming
// `where` and the byte offset of the first NUL byte or invalid UTF-8 sequence.
void check_text(std::string_view text, const std::string& where);

}  // namespace fsq
