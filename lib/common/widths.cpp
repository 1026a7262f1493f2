#include "common/widths.h"

#include <charconv>
#include <cstdint>

#include "common/error.h"

namespace fsq {

namespace {

std::string range_text() { return "a whole number of bits from 1 to " + std::to_string(kMaxWidth); }

// A number as typed ("width 0"); anything else quoted ("width '4x'").
std::string shown(std::string_view text) {
  const bool plain = !text.empty() && text.size() <= 24 &&
                     text.find_first_not_of("+-0123456789") == std::string_view::npos;
  return plain ? std::string(text) : quote_name(text);
}

}  // namespace

int parse_width(std::string_view text, const std::string& where) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || v < 1 || v > kMaxWidth)
    throw Error(where, "width " + shown(text) + " is not " + range_text());
  return static_cast<int>(v);
}

int width_from_json(const nlohmann::json& value, const std::string& where, const std::string& key) {
  const std::string shown = value.dump().substr(0, 40);
  if (!value.is_number_integer())
    throw Error(where, "'" + key + "' holds " + shown + ", not " + range_text());
  // Read at full width first: get<int>() of 4294967300 would wrap to 4.
  const bool in_range = value.is_number_unsigned() ? value.get<uint64_t>() <= static_cast<uint64_t>(kMaxWidth)
                                                   : value.get<int64_t>() <= kMaxWidth;
  if (!in_range || value.get<int64_t>() < 1)
    throw Error(where, "'" + key + "' holds " + shown + ", not " + range_text());
  return static_cast<int>(value.get<int64_t>());
}

}  // namespace fsq
