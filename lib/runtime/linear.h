// The linear-layer abstraction. The model calls Linear::forward and never sees how weights
// are stored; quantized layers (later issues) implement the same interface.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace fsq {

class Linear {
 public:
  virtual ~Linear() = default;
  // x: [..., in_features] in the compute dtype -> [..., out_features].
  virtual at::Tensor forward(const at::Tensor& x) const = 0;
  virtual int64_t in_features() const = 0;
  virtual int64_t out_features() const = 0;
  virtual std::string describe() const = 0;  // e.g. "dense f32 [576 x 576]"
  virtual int64_t weight_bytes() const = 0;  // bytes held for the weights
};

// y = x W^T + b with W [out, in] stored in any floating dtype; computed in x's dtype.
class DenseLinear final : public Linear {
 public:
  DenseLinear(at::Tensor weight, std::optional<at::Tensor> bias);
  at::Tensor forward(const at::Tensor& x) const override;
  int64_t in_features() const override;
  int64_t out_features() const override;
  std::string describe() const override;
  int64_t weight_bytes() const override;
  const at::Tensor& weight() const { return weight_; }
  const std::optional<at::Tensor>& bias() const { return bias_; }

 private:
  at::Tensor weight_;
  std::optional<at::Tensor> bias_;
};

}  // namespace fsq
