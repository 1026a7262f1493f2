// Hugging Face checkpoint directory: config.json, and the weights as SafetensorsShards reads
// them (one file, or shards cross-checked against their index).
#include "formats/checkpoint.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_file.h"
#include "common/sha256.h"
#include "formats/architectures.h"
#include "formats/gguf/gguf_model.h"
#include "formats/safetensors_shards.h"

namespace fsq {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

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

  c.shards_ = SafetensorsShards::open(dir).files();
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

std::shared_ptr<const void> Checkpoint::owner_of(const TensorView& v) const {
  const auto holds = [&](const std::vector<TensorView>& views) {
    return !views.empty() && &v >= views.data() && &v < views.data() + views.size();
  };
  if (owned_ && holds(owned_->views)) return owned_;
  for (const auto& shard : shards_)
    if (holds(shard->tensors())) return shard;
  return nullptr;
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
