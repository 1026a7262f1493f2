// The linear-layer abstraction. The model calls Linear::forward and never sees how weights
// are stored; quantized layers (later issues) implement the same interface.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "runtime/cpu/uniform_kernels.h"  // CpuIsa

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

  // The decode fast path (runtime/fast_decode.h): y [m, out] = x [m, in] W^T + b on
  // contiguous f32 rows, 1 <= m <= cpu::kMaxGemvRows (8), with no LibTorch dispatch or
  // allocation. Only called when supports_rows() is true; the default throws.
  virtual bool supports_rows() const { return false; }
  virtual void forward_rows(const float* x, int64_t m, float* y) const;
};

// y[i, n] += bias[n] for i < m (bias may be null).
void add_bias_rows(const float* bias, int64_t m, int64_t rows, float* y);

// y = x W^T + b with W [out, in] stored in any floating dtype; computed in x's dtype.
class DenseLinear final : public Linear {
 public:
  DenseLinear(at::Tensor weight, std::optional<at::Tensor> bias);
  at::Tensor forward(const at::Tensor& x) const override;
  int64_t in_features() const override;
  int64_t out_features() const override;
  std::string describe() const override;
  int64_t weight_bytes() const override;
  // Rows run through cpu::dense_gemv when the weights (and bias) are contiguous f32.
  bool supports_rows() const override;
  void forward_rows(const float* x, int64_t m, float* y) const override;
  const at::Tensor& weight() const { return weight_; }
  const std::optional<at::Tensor>& bias() const { return bias_; }

 private:
  at::Tensor weight_;
  std::optional<at::Tensor> bias_;
  cpu::CpuIsa isa_;
};

}  // namespace fsq
