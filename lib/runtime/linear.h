// The linear-layer abstraction. The model calls Linear::forward and never sees how weights
// are stored; quantized layers (later issues) implement the same interface.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/dense_kernels.h"  // Dense16WeightsView
#include "runtime/cpu/lut_kernels.h"      // LutWeightsView
#include "runtime/cpu/uniform_kernels.h"  // UniformWeightsView

namespace fsq {

// What fsq's CUDA decoders read of a linear (runtime/cuda_decode_spec.h), given by the linear
// itself: its packed uniform or LUT weights, or its dense weight.
struct LinearDeviceView {
  enum class Kind { None, Uniform, Lut, Dense };
  Kind kind = Kind::None;             // None: a kind of linear the decoders do not take
  cpu::UniformWeightsView uniform;    // Kind::Uniform (QuantLinear), valid while the linear lives
  cpu::LutWeightsView lut;            // Kind::Lut (LutLinear), likewise
  const at::Tensor* dense = nullptr;  // Kind::Dense (DenseLinear): its weight [out, in], as stored
  bool has_bias = false;
  LinearDeviceView() = default;
  LinearDeviceView(const cpu::UniformWeightsView& w, bool bias) : kind(Kind::Uniform), uniform(w), has_bias(bias) {}
  LinearDeviceView(const cpu::LutWeightsView& w, bool bias) : kind(Kind::Lut), lut(w), has_bias(bias) {}
  LinearDeviceView(const at::Tensor* weight, bool bias) : kind(Kind::Dense), dense(weight), has_bias(bias) {}
};

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

  // The weights as fsq's CUDA decoders would read them; the default: Kind::None.
  virtual LinearDeviceView device_view() const { return {}; }
};

// y[i, n] += bias[n] for i < m (bias may be null).
void add_bias_rows(const float* bias, int64_t m, int64_t rows, float* y);

// y = x W^T + b with W [out, in] stored in any floating dtype; computed in x's dtype. On the
// CPU in f32, bf16/f16 weights are read as stored (cpu::dense16_gemv, or widened a block of
// rows at a time): a model loaded from a bf16 checkpoint needs no f32 copy.
class DenseLinear final : public Linear {
 public:
  DenseLinear(at::Tensor weight, std::optional<at::Tensor> bias);
  at::Tensor forward(const at::Tensor& x) const override;
  int64_t in_features() const override;
  int64_t out_features() const override;
  std::string describe() const override;
  int64_t weight_bytes() const override;
  // Rows run through cpu::dense_gemv (cpu::dense16_gemv) when the weights are contiguous f32
  // (bf16, f16) on the CPU and the bias, if any, f32.
  bool supports_rows() const override;
  void forward_rows(const float* x, int64_t m, float* y) const override;
  LinearDeviceView device_view() const override;
  const at::Tensor& weight() const { return weight_; }
  const std::optional<at::Tensor>& bias() const { return bias_; }

 private:
  at::Tensor weight_;
  std::optional<at::Tensor> bias_;
  // The weights as a 16-bit kernel view when they are contiguous bf16/f16 on the CPU.
  std::optional<cpu::Dense16WeightsView> half_view() const;

  cpu::CpuIsa isa_;
};

}  // namespace fsq
