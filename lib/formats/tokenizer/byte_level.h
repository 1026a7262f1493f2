// GPT-2 byte <-> unicode map: byte-level BPE sees every byte as one printable code point
// (printable Latin-1 bytes map to themselves, the rest to U+0100.. in byte order).
#pragma once

#include <string>
#include <string_view>

namespace fsq::tok {

// Appends the byte-level image of `bytes` (one code point per byte, UTF-8 encoded).
void byte_level_encode(std::string_view bytes, std::string& out);

// Appends the bytes a byte-level token stands for. Returns false (appending nothing) when
// the token holds a code point outside the map, as HF's ByteLevel decoder then keeps the
// token's raw UTF-8 instead.
bool byte_level_decode(std::string_view token, std::string& out);

}  // namespace fsq::tok
