// The one parser of quantization widths (bits per weight, or per KV entry) for every command:
// command-line options (quantize --bits/--head-bits, plan --bits/--kv-bits/--quality-of) and
// widths read from files (plan.json's plan.bits_per_layer / bits_per_linear, profile widths).
// A width is a whole number from 1 to kMaxWidth, read without any narrowing: 4294967300
// (2^32 + 4) is refused, never taken as 4. Which widths a command accepts (a method's widths,
// the planner's) is checked after this, by the command.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace fsq {

inline constexpr int kMaxWidth = 16;

// "4" -> 4. Throws fsq::Error(where, ...) on anything else: not a whole number (3.5, 4x, ""),
// or outside 1..kMaxWidth.
int parse_width(std::string_view text, const std::string& where);

// A JSON value as a width: an integer (not 4.0, not "4", not true) from 1 to kMaxWidth.
// Throws fsq::Error(where, "'<key>' ...") naming the key.
int width_from_json(const nlohmann::json& value, const std::string& where, const std::string& key);

}  // namespace fsq
