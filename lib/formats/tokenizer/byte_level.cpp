#include "formats/tokenizer/byte_level.h"

#include <array>
#include <cstdint>

#include "formats/tokenizer/utf8.h"

namespace fsq::tok {
namespace {

struct ByteMap {
  std::array<std::string, 256> encoded;  // byte -> UTF-8 of its code point
  std::array<int16_t, 512> decoded;      // code point (< 512) -> byte, or -1

  ByteMap() {
    decoded.fill(-1);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(next++);
      append_utf8(encoded[b], cp);
      decoded[cp] = static_cast<int16_t>(b);
    }
  }
};

const ByteMap& byte_map() {
  static const ByteMap map;
  return map;
}

}  // namespace

void byte_level_encode(std::string_view bytes, std::string& out) {
  const ByteMap& map = byte_map();
  for (char c : bytes) out += map.encoded[static_cast<unsigned char>(c)];
}

bool byte_level_decode(std::string_view token, std::string& out) {
  const ByteMap& map = byte_map();
  const size_t start = out.size();
  for (size_t i = 0; i < token.size();) {
    const char32_t cp = next_code_point(token, i);
    if (cp >= map.decoded.size() || map.decoded[cp] < 0) {
      out.resize(start);
      return false;
    }
    out += static_cast<char>(map.decoded[cp]);
  }
  return true;
}

}  // namespace fsq::tok
