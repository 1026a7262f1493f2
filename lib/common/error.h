// fsq::Error: the one exception type lib/ throws. Its message is a single line that
// names the thing at fault (a file, a tensor, an option) and the problem, so tools/ can
// print it as-is and exit non-zero.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace fsq {

class Error : public std::runtime_error {
 public:
  // where: the file/tensor/option at fault; problem: what is wrong.
  Error(const std::string& where, const std::string& problem)
      : std::runtime_error(where.empty() ? problem : where + ": " + problem) {}
  // Adds "(expected E, got G)".
  Error(const std::string& where, const std::string& problem, const std::string& expected,
        const std::string& got)
      : Error(where, problem + " (expected " + expected + ", got " + got + ")") {}
};

// Quotes a file-supplied name for a message: 'name', control bytes escaped as \xNN so the
// message stays one line, cut after 200 characters so a hostile name cannot flood it.
inline std::string quote_name(std::string_view s) {
  constexpr size_t kMaxQuotedChars = 200;
  static const char* hex = "0123456789abcdef";
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < kMaxQuotedChars; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > kMaxQuotedChars) out += "...";
  return out + "'";
}

}  // namespace fsq
