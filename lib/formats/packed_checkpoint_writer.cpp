// write_packed_checkpoint: two passes over the groups. The first checks every group and
// learns each tensor's name, dtype, shape and size (nothing is packed), which fixes the
// shards, their headers, config.json and fsq.json's linears; the second makes the groups
// again in name order, bit-packs and writes their tensors straight into the shard files and
// hashes them. Everything goes into a staging folder renamed into place at the end.
#include <algorithm>
#include <bit>
#include <map>
#include <memory>
#include <set>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/sha256.h"
#include "formats/packed_checkpoint.h"
#include "formats/packed_group_tensors.h"
#include "formats/quant/quant_types.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

static_assert(std::endian::native == std::endian::little, "tensors are written in host byte order");

struct PlannedTensor {
  TensorLayout layout;
  size_t group = 0;
};

// What the first pass learns.
struct CheckpointPlan {
  std::vector<PlannedTensor> tensors;  // sorted by name
  json linears = json::object();       // fsq.json "linears"
  json head = json::object();          // fsq.json kPackedHeadKey
  std::set<std::string> quant_types;
};

void check_meta(const PackedCheckpointMeta& c, const std::string& where) {
  if (!c.source_config.is_object()) throw Error(where, "source config must be a JSON object");
  std::error_code ec;
  if (!c.tokenizer_dir.empty() && !fs::is_directory(c.tokenizer_dir, ec))
    throw Error(c.tokenizer_dir.string(), "tokenizer source folder not found");
  if (c.source_config.contains("quantization_config"))
    throw Error(where, "source config.json already has a quantization_config (an already quantized model)");
}

void add_entries(const std::vector<QuantizedLinearToWrite>& list, json& entries, const std::string& where) {
  for (const QuantizedLinearToWrite& l : list) {
    if (entries.contains(l.name)) throw Error(where, "linear " + quote_name(l.name) + " is given twice");
    entries[l.name] = {{"quant_type", l.quant_type()},
                       {"shape", {l.lut ? l.lut->rows : l.matrix.rows, l.lut ? l.lut->cols : l.matrix.cols}},
                       {"method", l.method},
                       {"options", l.options}};
  }
}

CheckpointPlan plan_checkpoint(const std::vector<PackedGroupMaker>& groups, const std::string& where) {
  CheckpointPlan plan;
  std::set<std::string> reserved;  // names the quantized linears own
  std::vector<std::string> dense;
  for (size_t i = 0; i < groups.size(); ++i) {
    const PackedGroup g = groups[i]();
    check_group(g, where);
    add_entries(g.linears, plan.linears, where);
    add_entries(g.head, plan.head, where);
    plan.quant_types.merge(group_quant_types(g));
    for (const auto* list : {&g.linears, &g.head})
      for (const QuantizedLinearToWrite& l : *list)
        for (std::string& name : quantized_linear_tensor_names(l.name)) reserved.insert(std::move(name));
    for (const TensorToWrite& t : g.dense) dense.push_back(t.name);
    const GroupTensors set = group_tensors(g, /*pack=*/false);
    for (size_t k = 0; k < set.tensors.size(); ++k) {
      const TensorToWrite& t = set.tensors[k];
      plan.tensors.push_back({{t.name, t.dtype, t.shape, set.nbytes[k]}, i});
    }
  }
  for (const std::string& name : dense)
    if (reserved.count(name)) throw Error(where, "dense tensor " + quote_name(name) + " clashes with a quantized linear");
  for (const auto& [name, entry] : plan.head.items())
    if (plan.linears.contains(name)) throw Error(where, "linear " + quote_name(name) + " is given twice");
  std::sort(plan.tensors.begin(), plan.tensors.end(),
            [](const PlannedTensor& a, const PlannedTensor& b) { return a.layout.name < b.layout.name; });
  for (size_t i = 1; i < plan.tensors.size(); ++i)
    if (plan.tensors[i].layout.name == plan.tensors[i - 1].layout.name)
      throw Error(where, "tensor " + quote_name(plan.tensors[i].layout.name) + " is given twice");
  return plan;
}

json build_config(const PackedCheckpointMeta& c, const CheckpointPlan& plan) {
  json config = c.source_config;
  config["quantization_config"] = {{"quant_method", "fsq"},
                                   {"format_version", kPackedFormatVersion},
                                   {"manifest", kPackedManifestFile},
                                   {"quant_types", plan.quant_types}};
  return config;
}

json build_manifest(const PackedCheckpointMeta& c, const CheckpointPlan& plan, json hashes) {
  json manifest = {{"format_version", kPackedFormatVersion},
                   {"source_sha256", c.source_sha256},
                   {"calibration", c.calibration},
                   {"linears", plan.linears},
                   {"tensor_sha256", std::move(hashes)}};
  // Optional provenance (FORMAT.md): absent rather than null, as version-1 writers before it.
  if (!c.run_options.is_null()) manifest["run_options"] = c.run_options;
  if (!plan.head.empty()) manifest[kPackedHeadKey] = plan.head;
  if (!c.producer.is_null()) manifest["producer"] = c.producer;
  return manifest;
}

void copy_source_files(const fs::path& from, const fs::path& to) {
  if (from.empty()) return;
  std::error_code ec;
  for (const std::string& name : packed_copied_source_files())
    if (fs::is_regular_file(from / name, ec)) copy_file_atomic(from / name, to / name);
}

// The one group in memory during the second pass, with its packed tensors by name.
struct LoadedGroup {
  size_t index = 0;
  PackedGroup group;
  GroupTensors tensors;
  std::map<std::string, size_t> by_name;  // position in tensors.tensors
};

// The second pass: writes the planned shards into `staging`, making groups as their
// tensors come due; returns every tensor's sha256.
json write_shards(const std::vector<PackedGroupMaker>& groups, const CheckpointPlan& plan, const ShardPlan& shards,
                  const fs::path& staging) {
  const std::map<std::string, std::string> meta = {
      {"format", "pt"}, {"fsq_format_version", std::to_string(kPackedFormatVersion)}};
  json hashes = json::object();
  std::unique_ptr<LoadedGroup> loaded;
  for (const Shard& shard : shards.shards) {
    const fs::path file = staging / shard.file;
    std::vector<TensorLayout> layout;
    for (size_t i = shard.begin; i < shard.end; ++i) layout.push_back(plan.tensors[i].layout);
    AtomicFile out(file);
    out.write(safetensors_header(layout, meta, file.string()));
    for (size_t i = shard.begin; i < shard.end; ++i) {
      const PlannedTensor& planned = plan.tensors[i];
      if (!loaded || loaded->index != planned.group) {
        loaded.reset();  // drop the previous group before making the next
        loaded = std::make_unique<LoadedGroup>();
        loaded->index = planned.group;
        loaded->group = groups[planned.group]();
        loaded->tensors = group_tensors(loaded->group, /*pack=*/true);
        for (size_t k = 0; k < loaded->tensors.tensors.size(); ++k) loaded->by_name[loaded->tensors.tensors[k].name] = k;
      }
      auto it = loaded->by_name.find(planned.layout.name);
      const TensorToWrite* t = it == loaded->by_name.end() ? nullptr : &loaded->tensors.tensors[it->second];
      if (!t || t->dtype != planned.layout.dtype || t->shape != planned.layout.shape ||
          t->data.size() != planned.layout.nbytes)
        throw Error(file.string(), "tensor " + quote_name(planned.layout.name) +
                                       " came out differently the second time its group was made");
      out.write(t->data);
      hashes[t->name] = sha256_hex(t->data);
    }
    out.commit();
  }
  return hashes;
}

}  // namespace

std::string QuantizedLinearToWrite::quant_type() const {
  if (lut) return lut_quant_name(lut->bits);
  if (act_quant != ActivationQuant::None) return w8a8_quant_name(act_quant);
  return uniform_quant_name(matrix.quant);
}

const std::vector<std::string>& packed_copied_source_files() {
  // clang-format off
  static const std::vector<std::string> names = {
      "tokenizer.json", "tokenizer.model", "tokenizer_config.json", "special_tokens_map.json",
      "added_tokens.json", "vocab.json", "merges.txt", "generation_config.json"};
  // clang-format on
  return names;
}

void write_packed_checkpoint(const PackedCheckpointMeta& meta, const std::vector<PackedGroupMaker>& groups,
                             const fs::path& out, const PackedWriteOptions& opts) {
  AtomicDir::check_destination(out);
  const std::string where = out.string();
  check_meta(meta, where);
  if (opts.max_shard_bytes == 0) throw Error(where, "the largest shard size must be at least 1 byte");

  const CheckpointPlan plan = plan_checkpoint(groups, where);
  std::vector<uint64_t> sizes;
  for (const PlannedTensor& t : plan.tensors) sizes.push_back(t.layout.nbytes);
  const ShardPlan shards = plan_shards(sizes, opts.max_shard_bytes);
  const json config = build_config(meta, plan);

  AtomicDir dir(out);  // removes its staging folder on any failure
  const fs::path& staging = dir.staging();
  const json hashes = write_shards(groups, plan, shards, staging);
  if (shards.shards.size() > 1) {
    std::map<std::string, std::string> weight_map;
    for (const Shard& shard : shards.shards)
      for (size_t i = shard.begin; i < shard.end; ++i) weight_map[plan.tensors[i].layout.name] = shard.file;
    write_file_atomic(staging / kWeightsIndexFile, shard_index_text(shard_index(weight_map, shards.total_bytes)));
  }
  write_file_atomic(staging / kPackedConfigFile, config.dump(2) + "\n");
  copy_source_files(meta.tokenizer_dir, staging);
  // fsq.json last: a staging folder with it is complete.
  write_file_atomic(staging / kPackedManifestFile, build_manifest(meta, plan, hashes).dump(2) + "\n");
  dir.commit();
}

void write_packed_checkpoint(const PackedCheckpointToWrite& ckpt, const fs::path& out, const PackedWriteOptions& opts) {
  // The tensors are already in memory: the one group hands out copies of the lists (the
  // dense bytes stay where they are).
  const PackedGroupMaker whole = [&ckpt] { return PackedGroup{ckpt.dense, ckpt.linears, ckpt.head, {}}; };
  write_packed_checkpoint(static_cast<const PackedCheckpointMeta&>(ckpt), {whole}, out, opts);
}

}  // namespace fsq
