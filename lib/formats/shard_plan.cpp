#include "formats/shard_plan.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "common/error.h"

namespace fsq {

uint64_t parse_shard_size(const std::string& text, const std::string& option) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::tolower(c); });
  static const std::map<std::string, double> kUnits = {
      {"", 1},           {"b", 1},           {"kb", 1e3},         {"mb", 1e6},
      {"gb", 1e9},       {"tb", 1e12},       {"kib", 1024.0},     {"mib", 1024.0 * 1024},
      {"gib", 1024.0 * 1024 * 1024},         {"tib", 1024.0 * 1024 * 1024 * 1024}};
  auto it = kUnits.find(unit);
  const double bytes = it == kUnits.end() ? 0 : std::floor(value * it->second);
  if (used == 0 || it == kUnits.end() || !(bytes >= 1) || bytes > 1e18)
    throw Error(option, "expects a size such as 5GB, 500MB, 2GiB or a byte count, got " + quote_name(text));
  return static_cast<uint64_t>(bytes);
}

ShardPlan plan_shards(const std::vector<uint64_t>& sizes, uint64_t max_shard_bytes) {
  ShardPlan plan;
  std::vector<size_t> first;  // each shard's first tensor
  uint64_t current = 0;       // bytes in the open shard
  bool open = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const uint64_t size = sizes[i];
    plan.total_bytes += size;
    if (size > max_shard_bytes) {  // a shard of its own; the next tensor starts another
      first.push_back(i);
      open = false;
      continue;
    }
    if (!open || current + size > max_shard_bytes) {
      first.push_back(i);
      current = 0;
      open = true;
    }
    current += size;
  }
  if (first.empty()) first.push_back(0);  // no tensors: one empty file
  const size_t n = first.size();
  for (size_t i = 0; i < n; ++i)
    plan.shards.push_back({n == 1 ? "model.safetensors" : shard_file_name(i, n), first[i],
                           i + 1 < n ? first[i + 1] : sizes.size()});
  return plan;
}

std::string shard_file_name(size_t index, size_t count) {
  char name[64];
  std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", index + 1, count);
  return name;
}

nlohmann::json shard_index(const std::map<std::string, std::string>& weight_map, uint64_t total_bytes) {
  return {{"metadata", {{"total_size", total_bytes}}}, {"weight_map", weight_map}};
}

std::string shard_index_text(const nlohmann::json& index) {
  return index.dump(2, ' ', /*ensure_ascii=*/true) + "\n";
}

}  // namespace fsq
