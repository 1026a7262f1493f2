#include "quantize/layer_values.h"

#include <ATen/ATen.h>

#include "common/error.h"

namespace fsq {

const DenseLinear& dense_linear(const DecoderLayer& layer, const std::string& role, const std::string& who) {
  const auto* d = dynamic_cast<const DenseLinear*>(layer.linear(role).get());
  if (d == nullptr) throw Error(who, role + " is not a dense linear: " + layer.linear(role)->describe());
  return *d;
}

std::vector<float> to_floats(const at::Tensor& t) {
  at::Tensor c = t.detach().to(at::kCPU, at::kFloat).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

}  // namespace fsq
