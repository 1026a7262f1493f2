// Hugging Face checkpoint directory. Like transformers, a single model.safetensors wins
// over an index; a sharded set is cross-checked against its index both ways (every mapped
// tensor is in its shard, every shard tensor is mapped, no tensor in two shards) so a
// mixed-up download fails at open instead of loading the wrong weights.
#include "formats/checkpoint.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_file.h"
#include "common/sha256.h"
#include "formats/architectures.h"
#include "formats/gguf/gguf_model.h"

namespace fsq {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

// A name for an error message: JSON-escaped, non-ASCII as \u escapes (one line).
std::string json_quoted_ascii(const std::string& s) {
  return json(s).dump(-1, ' ', true, json::error_handler_t::replace);
}

// weight_map of the index: tensor name -> shard file name (a plain name inside dir).
std::map<std::string, std::string> read_weight_map(const fs::path& index) {
  const std::string where = index.string();
  const json j = read_json_file(index);
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw Error(where, "expected an object with a \"weight_map\" object");
  std::map<std::string, std::string> map;
  for (const auto& [name, file] : j["weight_map"].items()) {
    if (!file.is_string())
      throw Error(where, "weight_map entry " + json_quoted_ascii(name) + " must be a file name string");
    const auto& f = file.get_ref<const std::string&>();
    // Shards must sit beside the index; a path could point anywhere on the machine.
    if (f.empty() || f == "." || f == ".." || f.find('/') != std::string::npos)
      throw Error(where, "weight_map entry " + json_quoted_ascii(name) + " names " + json_quoted_ascii(f) +
                             ", which is not a plain file name");
    map[name] = f;
  }
  if (map.empty()) throw Error(where, "weight_map is empty");
  return map;
}

// The config's layer count must be the weights' layer count: a smaller num_hidden_layers
// would silently drop layers, a larger one fail later with a missing tensor.
void check_layer_count(const Checkpoint& c, const std::string& where) {
  const ArchSpec& arch = arch_spec_for(c.config().architecture);
  const std::string prefix = arch.layer_prefix.substr(0, arch.layer_prefix.find("{layer}"));
  int64_t layers = 0;
  for (const TensorView* t : c.tensors()) {
    if (t->name.rfind(prefix, 0) != 0) continue;
    const size_t end = t->name.find('.', prefix.size());
    const std::string index = t->name.substr(prefix.size(), end - prefix.size());
    if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos || index.size() > 9) continue;
    layers = std::max<int64_t>(layers, std::stoll(index) + 1);
  }
  // Weights without any layer tensor (format-level fixtures) are left to the model loader,
  // which names the first missing tensor.
  if (layers > 0 && layers != c.config().num_layers)
    throw Error(where, "the config says " + std::to_string(c.config().num_layers) + " decoder layers but the weights hold " +
                           std::to_string(layers) + " (" + prefix + "0.." + std::to_string(layers - 1) +
                           "); fix num_hidden_layers (block_count in GGUF) or the weights");
}

}  // namespace

Checkpoint Checkpoint::open(const fs::path& dir) {
  std::error_code ec;
  if (is_gguf_path(dir)) return checkpoint_from_gguf(dir);
  if (!fs::is_directory(dir, ec))
    throw Error(dir.string(), fs::exists(dir, ec) ? "not a directory" : "checkpoint directory not found");
  Checkpoint c;
  c.dir_ = dir;
  const fs::path config = dir / "config.json";
  if (!fs::exists(config, ec)) throw Error(config.string(), "file not found (every checkpoint needs one)");
  c.config_ = load_model_config(config);

  const fs::path single = dir / kSingleFile;
  const fs::path index = dir / kIndexFile;
  if (fs::exists(single, ec)) {
    c.shards_.push_back(SafetensorsFile::open(single));
    check_layer_count(c, dir.string());
    return c;
  }
  if (!fs::exists(index, ec))
    throw Error(dir.string(), std::string("no weights: neither ") + kSingleFile + " nor " + kIndexFile);

  const auto weight_map = read_weight_map(index);
  std::map<std::string, size_t> shard_of_file;  // file name -> position in shards_ (name order)
  for (const auto& [name, file] : weight_map) shard_of_file.emplace(file, 0);
  for (auto& [file, pos] : shard_of_file) {
    const fs::path p = dir / file;
    if (!fs::exists(p, ec))
      throw Error(index.string(), "shard " + json_quoted_ascii(file) + " named in weight_map does not exist");
    pos = c.shards_.size();
    c.shards_.push_back(SafetensorsFile::open(p));
  }

  std::map<std::string, const SafetensorsFile*> owner;
  for (const auto& shard : c.shards_) {
    const std::string file = shard->path().filename().string();
    for (const TensorView& t : shard->tensors()) {
      auto [it, fresh] = owner.emplace(t.name, shard.get());
      if (!fresh)
        throw Error(index.string(), "tensor " + json_quoted_ascii(t.name) + " is in two shards, " +
                                        json_quoted_ascii(it->second->path().filename().string()) + " and " +
                                        json_quoted_ascii(file));
      auto mapped = weight_map.find(t.name);
      if (mapped == weight_map.end())
        throw Error(index.string(), "tensor " + json_quoted_ascii(t.name) + " in shard " + json_quoted_ascii(file) +
                                        " is not listed in weight_map");
    }
  }
  for (const auto& [name, file] : weight_map) {
    if (c.shards_[shard_of_file.at(file)]->find(name) == nullptr)
      throw Error(index.string(), "tensor " + json_quoted_ascii(name) + " is mapped to shard " + json_quoted_ascii(file) +
                                      ", which does not contain it");
  }
  check_layer_count(c, dir.string());
  return c;
}

Checkpoint Checkpoint::from_memory(fs::path source, ModelConfig config, OwnedTensors tensors,
                                   std::string weights_sha256) {
  Checkpoint c;
  c.dir_ = std::move(source);
  c.config_ = std::move(config);
  std::sort(tensors.views.begin(), tensors.views.end(),
            [](const TensorView& a, const TensorView& b) { return a.name < b.name; });
  for (size_t i = 1; i < tensors.views.size(); ++i)
    if (tensors.views[i].name == tensors.views[i - 1].name)
      throw Error(c.dir_.string(), "tensor " + json_quoted_ascii(tensors.views[i].name) + " appears twice");
  c.owned_ = std::make_shared<const OwnedTensors>(std::move(tensors));
  c.known_sha256_ = std::move(weights_sha256);
  check_layer_count(c, c.dir_.string());
  return c;
}

const TensorView* Checkpoint::find(const std::string& name) const {
  if (owned_) {
    auto it = std::lower_bound(owned_->views.begin(), owned_->views.end(), name,
                               [](const TensorView& t, const std::string& n) { return t.name < n; });
    if (it != owned_->views.end() && it->name == name) return &*it;
  }
  for (const auto& shard : shards_)
    if (const TensorView* t = shard->find(name)) return t;
  return nullptr;
}

const TensorView& Checkpoint::get(const std::string& name) const {
  if (const TensorView* t = find(name)) return *t;
  throw Error(dir_.string(), "checkpoint has no tensor " + json_quoted_ascii(name));
}

std::vector<const TensorView*> Checkpoint::tensors() const {
  std::vector<const TensorView*> out;
  if (owned_)
    for (const TensorView& t : owned_->views) out.push_back(&t);
  for (const auto& shard : shards_)
    for (const TensorView& t : shard->tensors()) out.push_back(&t);
  std::sort(out.begin(), out.end(),
            [](const TensorView* a, const TensorView* b) { return a->name < b->name; });
  return out;
}

// One file: its own sha256 (what `sha256sum model.safetensors` prints). Several shards:
// sha256 of the text sha256_hex(shard) + file name, for each shard in file-name order
// (shards_ is kept in that order), so a renamed shard is a different identity. Reads every
// shard in full, so callers should compute it once.
std::string Checkpoint::weights_sha256() const {
  if (!known_sha256_.empty()) return known_sha256_;
  if (shards_.size() == 1) return sha256_file(shards_.front()->path());
  std::string text;
  for (const auto& shard : shards_)
    text += sha256_file(shard->path()) + shard->path().filename().string();
  return sha256_hex(text);
}

}  // namespace fsq
