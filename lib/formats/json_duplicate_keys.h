// Duplicate keys in JSON text. nlohmann keeps the last of two equal keys silently, so a file
// could show one value to fsq and another to a different reader (safetensors headers, shard
// indexes): such files are refused instead.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fsq {

// The first key that appears twice in one object, at any depth, of the JSON `text`; nullopt
// when there is none (or the text is not JSON: parse it first for that message).
std::optional<std::string> first_duplicate_key(std::string_view text);

}  // namespace fsq
