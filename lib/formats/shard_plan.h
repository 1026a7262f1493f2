// How a checkpoint's tensors are split into safetensors shards, as Hugging Face writes them
// (huggingface_hub's split_state_dict_into_shards, used by transformers' save_pretrained):
// tensors in order fill a shard until the next would take it past the limit; a tensor larger
// than the limit gets a shard of its own (Hugging Face then keeps filling the shard it had
// open; here that shard is closed, so that every shard holds a run of consecutive tensors, in
// name order when the tensors are sorted). One shard is "model.safetensors" with no index;
// n shards are "model-0000i-of-0000n.safetensors" plus model.safetensors.index.json.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fsq {

// save_pretrained's default max_shard_size="5GB" (decimal gigabytes, as Hugging Face counts).
inline constexpr uint64_t kDefaultMaxShardBytes = 5'000'000'000;

// "5GB", "500MB", "2GiB", "1e9" or a plain byte count -> bytes (common/byte_size.h: KB/MB/GB/TB
// are powers of 10, as Hugging Face's max_shard_size counts them). Throws fsq::Error naming
// `option` on anything else or a size below 1 byte.
uint64_t parse_shard_size(const std::string& text, const std::string& option);

struct Shard {
  std::string file;            // "model.safetensors" or "model-00001-of-00003.safetensors"
  size_t begin = 0, end = 0;   // the tensors [begin, end) of the planned order
};

struct ShardPlan {
  std::vector<Shard> shards;  // at least one (an empty file when there are no tensors)
  uint64_t total_bytes = 0;   // all tensors' data
};

// Plans tensors of `sizes` bytes, in that order, into shards of at most `max_shard_bytes`.
ShardPlan plan_shards(const std::vector<uint64_t>& sizes, uint64_t max_shard_bytes);

// "model-00002-of-00005.safetensors" (0-based index 1 of 5).
std::string shard_file_name(size_t index, size_t count);

// model.safetensors.index.json: {"metadata": {"total_size": N}, "weight_map": {tensor: file}}.
nlohmann::json shard_index(const std::map<std::string, std::string>& weight_map, uint64_t total_bytes);
// Its text as transformers writes it (json.dumps(index, indent=2, sort_keys=True) + "\n").
std::string shard_index_text(const nlohmann::json& index);

}  // namespace fsq
