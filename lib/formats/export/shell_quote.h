// Quoting for the launch scripts the exporters write.
#pragma once

#include <string>

namespace fsq {

// `s` as one bash word in single quotes ('it'\''s').
inline std::string shell_single_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace fsq
