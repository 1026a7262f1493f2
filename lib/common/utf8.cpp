#include "common/utf8.h"

#include "common/error.h"

namespace fsq {

size_t find_invalid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    char32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2, cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3, cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4, cp = c & 0x07;
    } else {
      return i;
    }
    if (i + len > n) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    // Overlong 3/4-byte forms, surrogates and values past U+10FFFF.
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return i;
    i += len;
  }
  return std::string_view::npos;
}

void check_text(std::string_view text, const std::string& where) {
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
    throw Error(where, "is not text: NUL byte at offset " + std::to_string(nul) + " (a binary file?)");
  if (const size_t bad = find_invalid_utf8(text); bad != std::string_view::npos)
    throw Error(where, "is not UTF-8 text: invalid byte at offset " + std::to_string(bad) + " (a binary file?)");
}

}  // namespace fsq
