#include "runtime/linear.h"

#include <ATen/ATen.h>

#include "runtime/torch_bridge.h"

namespace fsq {

DenseLinear::DenseLinear(at::Tensor weight, std::optional<at::Tensor> bias)
    : weight_(std::move(weight)), bias_(std::move(bias)) {}

at::Tensor DenseLinear::forward(const at::Tensor& x) const {
  // Weights may be kept in a narrower dtype than the activations (bf16 weights, f32 compute).
  const at::Tensor w = weight_.scalar_type() == x.scalar_type() ? weight_ : weight_.to(x.scalar_type());
  if (!bias_) return at::linear(x, w);
  const at::Tensor b = bias_->scalar_type() == x.scalar_type() ? *bias_ : bias_->to(x.scalar_type());
  return at::linear(x, w, b);
}

int64_t DenseLinear::in_features() const { return weight_.size(1); }
int64_t DenseLinear::out_features() const { return weight_.size(0); }

std::string DenseLinear::describe() const {
  return "dense " + scalar_type_name(weight_.scalar_type()) + " [" + std::to_string(out_features()) + " x " +
         std::to_string(in_features()) + "]";
}

int64_t DenseLinear::weight_bytes() const {
  int64_t n = weight_.numel() * static_cast<int64_t>(weight_.element_size());
  if (bias_) n += bias_->numel() * static_cast<int64_t>(bias_->element_size());
  return n;
}

}  // namespace fsq
