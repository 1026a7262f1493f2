#include "common/byte_size.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "common/error.h"

namespace fsq {

int64_t parse_byte_size(const std::string& text, const std::string& option) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::tolower(c); });
  constexpr double kKi = 1024.0;
  static const std::map<std::string, double> kUnits = {
      {"", 1},          {"b", 1},          {"kb", 1e3},       {"mb", 1e6},        {"gb", 1e9},
      {"tb", 1e12},     {"k", kKi},        {"kib", kKi},      {"m", kKi * kKi},   {"mib", kKi * kKi},
      {"g", kKi * kKi * kKi},              {"gib", kKi * kKi * kKi},              {"t", kKi * kKi * kKi * kKi},
      {"tib", kKi * kKi * kKi * kKi}};
  const auto it = kUnits.find(unit);
  const double bytes = it == kUnits.end() ? 0 : std::floor(value * it->second);
  if (used == 0 || it == kUnits.end() || !(bytes >= 1) || bytes > 1e18)
    throw Error(option, "expects a size such as 5GB, 16G, 512MiB or a byte count, got " + quote_name(text));
  return static_cast<int64_t>(bytes);
}

}  // namespace fsq
