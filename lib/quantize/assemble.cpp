// The checkpoint is streamed (formats/packed_checkpoint.h): one group per decoder layer, made
// from its saved layer, and one per other source tensor (the embedding, the final norm, the
// head), so that at most one layer's tensors are in memory while the shards are written.
#include "quantize/assemble.h"

#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "common/error.h"
#include "common/half.h"
#include "common/json_file.h"
#include "formats/architectures.h"
#include "formats/checkpoint.h"
#include "formats/packed_checkpoint.h"
#include "quantize/head_quant.h"
#include "quantize/quantize_model.h"
#include "quantize/stored_values.h"

namespace fsq {
namespace {

// Floats stored in the dtype the source used for that tensor.
std::vector<std::byte> encode(const std::vector<float>& v, DType dtype, const std::string& name) {
  std::vector<std::byte> out;
  if (dtype == DType::F32) {
    out.resize(v.size() * 4);
    std::memcpy(out.data(), v.data(), out.size());
    return out;
  }
  if (dtype != DType::BF16 && dtype != DType::F16) throw Error(name, "unsupported source dtype for a rewritten tensor");
  out.resize(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t h = dtype == DType::BF16 ? f32_to_bf16(v[i]) : f32_to_f16(v[i]);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

// A dense tensor of the group whose bytes the group owns.
void add_owned(PackedGroup& g, const std::string& name, DType dtype, std::vector<int64_t> shape,
               std::vector<std::byte> bytes) {
  auto owned = std::make_shared<const std::vector<std::byte>>(std::move(bytes));
  g.dense.push_back({name, dtype, std::move(shape), *owned});
  g.storage.push_back(std::move(owned));
}

// Decoder layer i from its saved values, plus the source tensors under the layer's prefix
// that the saved layer does not replace (passed through as they are).
PackedGroup layer_group(const AssemblyInputs& in, const QuantMethod& method, const LayerStore& store, int64_t i,
                        const std::vector<const TensorView*>& passed_through, nlohmann::json& report) {
  const Checkpoint& ckpt = in.checkpoint;
  const ArchSpec& arch = arch_spec_for(ckpt.config().architecture);
  StoredLayer stored = store.load(i);
  report = stored.report;
  PackedGroup g;
  std::set<std::string> written;
  auto add_vector = [&](const std::string& name, const std::vector<float>& v) {
    const TensorView& original = ckpt.get(name);
    add_owned(g, name, original.dtype, original.shape, encode(v, original.dtype, name));
    written.insert(name);
  };
  add_vector(layer_name(arch.input_norm.hf, i), stored.vectors.at("input_norm"));
  add_vector(layer_name(arch.post_attn_norm.hf, i), stored.vectors.at("post_attn_norm"));
  if (auto r = stored.vectors.find(kIntonlyRangesKey); r != stored.vectors.end()) {
    const std::string name = layer_name(arch.layer_prefix + kIntonlyRangesSuffix, i);
    add_owned(g, name, DType::F32, {static_cast<int64_t>(r->second.size())}, encode(r->second, DType::F32, name));
  }
  const nlohmann::json options = {{"report", stored.report}};
  auto add_bias = [&](const std::string& role, const std::string& base) {
    if (auto b = stored.vectors.find(role + ".bias"); b != stored.vectors.end()) add_vector(base + ".bias", b->second);
  };
  for (auto& [role, matrix] : stored.linears) {
    const std::string base = layer_name(arch.linear(role).pattern, i);
    add_bias(role, base);
    QuantizedLinearToWrite linear{base, std::move(matrix), "", options, std::nullopt};
    method.describe_linear(linear, stored, role);
    g.linears.push_back(std::move(linear));
  }
  for (const auto& spec : arch.linears) {
    auto fp16 = stored.vectors.find(spec.role + kFp16WeightKey);
    if (fp16 == stored.vectors.end()) continue;
    const std::string base = layer_name(spec.pattern, i);
    add_bias(spec.role, base);
    const TensorView& original = ckpt.get(base + ".weight");
    add_owned(g, base + ".weight", DType::F16, original.shape, encode(fp16->second, DType::F16, base + ".weight"));
    written.insert(base + ".weight");
  }
  for (auto& [role, matrix] : stored.lut_linears) {
    const std::string base = layer_name(arch.linear(role).pattern, i);
    add_bias(role, base);
    g.linears.push_back({base, QuantizedMatrix{}, method.name(), options, std::move(matrix)});
  }
  for (const TensorView* v : passed_through)
    if (!written.count(v->name)) g.dense.push_back({v->name, v->dtype, v->shape, {v->data, v->nbytes}});
  return g;
}

// The decoder layer whose tensors `name` belongs to, or -1.
int64_t layer_of(const std::string& name, const ArchSpec& arch, int64_t layers) {
  for (int64_t i = 0; i < layers; ++i)
    if (name.starts_with(layer_name(arch.layer_prefix, i) + ".")) return i;
  return -1;
}

}  // namespace

nlohmann::json assemble_checkpoint(const AssemblyInputs& in, const QuantMethod& method, const LayerStore& store) {
  const QuantizeConfig& cfg = in.config;
  const Checkpoint& ckpt = in.checkpoint;
  const ModelConfig& mc = ckpt.config();
  const ArchSpec& arch = arch_spec_for(mc.architecture);
  PackedCheckpointMeta meta;
  meta.source_config = read_json_file(cfg.model / "config.json");
  meta.calibration = in.calibration;
  meta.run_options = in.run_options;
  meta.producer = cfg.producer;
  meta.source_sha256 = ckpt.weights_sha256();
  meta.tokenizer_dir = cfg.model;

  // The source tensors the quantized layers do not replace: per layer, or on their own.
  std::vector<std::vector<const TensorView*>> layer_sources(static_cast<size_t>(mc.num_layers));
  std::vector<const TensorView*> other_sources;
  for (const TensorView* v : ckpt.tensors()) {
    if (in.linear_names.count(v->name)) continue;
    const int64_t layer = layer_of(v->name, arch, mc.num_layers);
    if (layer >= 0)
      layer_sources[static_cast<size_t>(layer)].push_back(v);
    else
      other_sources.push_back(v);
  }

  nlohmann::json reports = nlohmann::json::array();
  std::vector<nlohmann::json> layer_reports(static_cast<size_t>(mc.num_layers));
  std::vector<PackedGroupMaker> groups;
  for (int64_t i = 0; i < mc.num_layers; ++i)
    groups.push_back([&, i] {
      return layer_group(in, method, store, i, layer_sources[static_cast<size_t>(i)], layer_reports[static_cast<size_t>(i)]);
    });
  const std::optional<UniformQuant> head_quant = head_quant_for_bits(cfg.head_bits);
  const std::set<std::string> head = head_quant ? head_weight_names(arch, ckpt) : std::set<std::string>{};
  for (const TensorView* v : other_sources)
    groups.push_back([v, &head, &head_quant] {
      PackedGroup g;
      if (head.count(v->name))
        g.head.push_back(quantize_head_matrix(*v, *head_quant));
      else
        g.dense.push_back({v->name, v->dtype, v->shape, {v->data, v->nbytes}});
      return g;
    });
  write_packed_checkpoint(meta, groups, cfg.out, {cfg.max_shard_bytes});
  for (int64_t i = 0; i < mc.num_layers; ++i)
    reports.push_back({{"layer", i}, {"report", layer_reports[static_cast<size_t>(i)]}});
  return reports;
}

}  // namespace fsq
