#include "quantize/assemble.h"

#include <cstring>
#include <deque>
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

}  // namespace

nlohmann::json assemble_checkpoint(const AssemblyInputs& in, const QuantMethod& method, const LayerStore& store) {
  const QuantizeConfig& cfg = in.config;
  const Checkpoint& ckpt = in.checkpoint;
  const ModelConfig& mc = ckpt.config();
  const ArchSpec& arch = arch_spec_for(mc.architecture);
  PackedCheckpointToWrite packed;
  packed.source_config = read_json_file(cfg.model / "config.json");
  packed.calibration = in.calibration;
  packed.run_options = in.run_options;
  packed.producer = cfg.producer;
  packed.source_sha256 = ckpt.weights_sha256();
  packed.tokenizer_dir = cfg.model;
  nlohmann::json reports = nlohmann::json::array();
  std::deque<std::vector<std::byte>> rewritten;  // storage for norms and biases
  std::set<std::string> from_layers;
  for (int64_t i = 0; i < mc.num_layers; ++i) {
    StoredLayer stored = store.load(i);
    reports.push_back({{"layer", i}, {"report", stored.report}});
    auto add_vector = [&](const std::string& name, const std::vector<float>& v) {
      const TensorView& original = ckpt.get(name);
      rewritten.push_back(encode(v, original.dtype, name));
      packed.dense.push_back({name, original.dtype, original.shape, rewritten.back()});
      from_layers.insert(name);
    };
    add_vector(layer_name(arch.input_norm.hf, i), stored.vectors.at("input_norm"));
    add_vector(layer_name(arch.post_attn_norm.hf, i), stored.vectors.at("post_attn_norm"));
    if (auto r = stored.vectors.find(kIntonlyRangesKey); r != stored.vectors.end()) {
      const std::string name = layer_name(arch.layer_prefix + kIntonlyRangesSuffix, i);
      rewritten.push_back(encode(r->second, DType::F32, name));
      packed.dense.push_back({name, DType::F32, {static_cast<int64_t>(r->second.size())}, rewritten.back()});
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
      packed.linears.push_back(std::move(linear));
    }
    for (const auto& spec : arch.linears) {
      auto fp16 = stored.vectors.find(spec.role + kFp16WeightKey);
      if (fp16 == stored.vectors.end()) continue;
      const std::string base = layer_name(spec.pattern, i);
      add_bias(spec.role, base);
      const TensorView& original = ckpt.get(base + ".weight");
      rewritten.push_back(encode(fp16->second, DType::F16, base + ".weight"));
      packed.dense.push_back({base + ".weight", DType::F16, original.shape, rewritten.back()});
    }
    for (auto& [role, matrix] : stored.lut_linears) {
      const std::string base = layer_name(arch.linear(role).pattern, i);
      add_bias(role, base);
      packed.linears.push_back({base, QuantizedMatrix{}, method.name(), options, std::move(matrix)});
    }
  }
  const std::optional<UniformQuant> head_quant = head_quant_for_bits(cfg.head_bits);
  const std::set<std::string> head = head_quant ? head_weight_names(arch, ckpt) : std::set<std::string>{};
  for (const TensorView* v : ckpt.tensors()) {
    if (in.linear_names.count(v->name) || from_layers.count(v->name)) continue;
    if (head.count(v->name))
      packed.head.push_back(quantize_head_matrix(*v, *head_quant));
    else
      packed.dense.push_back({v->name, v->dtype, v->shape, {v->data, v->nbytes}});
  }
  write_packed_checkpoint(packed, cfg.out);
  return reports;
}

}  // namespace fsq
