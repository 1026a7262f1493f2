#include "formats/shard_plan.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "common/byte_size.h"
#include "common/error.h"

namespace fsq {

uint64_t parse_shard_size(const std::string& text, const std::string& option) {
  return static_cast<uint64_t>(parse_byte_size(text, option));
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
