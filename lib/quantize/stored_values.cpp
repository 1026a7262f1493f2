#include "quantize/stored_values.h"

#include <ATen/ATen.h>

#include <cstring>

#include "common/half.h"
#include "formats/architectures.h"
#include "formats/quant/quant_types.h"
#include "quantize/layer_values.h"
#include "runtime/model.h"

namespace fsq {
namespace {

const DenseLinear& dense(const DecoderLayer& layer, const std::string& role) {
  return dense_linear(layer, role, "quantize");
}

at::Tensor host_floats_like(std::vector<float> v, const std::vector<int64_t>& shape, const at::Tensor& like) {
  at::Tensor host = at::empty(shape, at::kFloat);
  std::memcpy(host.data_ptr<float>(), v.data(), v.size() * sizeof(float));
  return host.to(like.device(), like.scalar_type());
}

}  // namespace

void keep_fp16_linears(const DecoderLayer& layer, const ArchSpec& arch, const LayerWidths* widths, StoredLayer& stored) {
  for (const auto& spec : arch.linears) {
    if (widths && widths->at(spec.role) != 16) continue;
    const DenseLinear& d = dense(layer, spec.role);
    std::vector<float> w = to_floats(d.weight());
    for (float& x : w) x = f16_to_f32(f32_to_f16(x));
    stored.vectors[spec.role + kFp16WeightKey] = std::move(w);
    if (d.bias()) stored.vectors[spec.role + ".bias"] = to_floats(*d.bias());
    if (widths) stored.report[spec.role] = {{"bits", 16}};
  }
  stored.vectors["input_norm"] = to_floats(layer.input_norm);
  stored.vectors["post_attn_norm"] = to_floats(layer.post_attn_norm);
}

void use_stored_values(DecoderLayer& layer, const ArchSpec& arch, const StoredLayer& stored) {
  layer.input_norm = host_floats_like(stored.vectors.at("input_norm"), layer.input_norm.sizes().vec(), layer.input_norm);
  layer.post_attn_norm =
      host_floats_like(stored.vectors.at("post_attn_norm"), layer.post_attn_norm.sizes().vec(), layer.post_attn_norm);
  for (const auto& spec : arch.linears) {
    const DenseLinear& d = dense(layer, spec.role);
    std::vector<float> w(static_cast<size_t>(d.out_features() * d.in_features()));
    if (auto lut = stored.lut_linears.find(spec.role); lut != stored.lut_linears.end())
      dequantize_lut(lut->second, w.data());
    else if (auto fp16 = stored.vectors.find(spec.role + kFp16WeightKey); fp16 != stored.vectors.end())
      w = fp16->second;
    else
      dequantize_uniform(stored.linears.at(spec.role), w.data());
    std::optional<at::Tensor> bias;
    if (d.bias()) bias = host_floats_like(stored.vectors.at(spec.role + ".bias"), d.bias()->sizes().vec(), *d.bias());
    layer.linear(spec.role) = std::make_unique<DenseLinear>(
        host_floats_like(std::move(w), {d.out_features(), d.in_features()}, d.weight()), std::move(bias));
  }
}

}  // namespace fsq
