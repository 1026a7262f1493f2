#include "quantize/layer_values.h"

#include <ATen/ATen.h>

#include <memory>

#include "common/error.h"

namespace fsq {

const DenseLinear& dense_linear(const DecoderLayer& layer, const std::string& role, const std::string& who) {
  const auto* d = dynamic_cast<const DenseLinear*>(layer.linear(role).get());
  if (d == nullptr) throw Error(who, role + " is not a dense linear: " + layer.linear(role)->describe());
  return *d;
}

void set_dense_linear(DecoderLayer& layer, const std::string& role, at::Tensor weight, std::optional<at::Tensor> bias) {
  layer.linear(role) = std::make_unique<DenseLinear>(std::move(weight), std::move(bias));
}

std::vector<float> to_floats(const at::Tensor& t) {
  at::Tensor c = t.detach().to(at::kCPU, at::kFloat).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

}  // namespace fsq
