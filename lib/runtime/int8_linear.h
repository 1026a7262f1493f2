// A W8A8 linear (formats/quant/w8a8_quant.h): int8 weights per output channel times int8
// activations quantized at run time (per token, or per tensor with a static scale),
// multiplied in integers by the kernels of runtime/cpu/int8_kernels.h; per block of 32
// columns (w8a8b32) by the Q8_0-activation kernels of runtime/cpu/uniform_q8_kernels.h on
// the same codes read as w8pcs (VNNI GEMM for prompts, GEMV for decode, the scalar spec
// where the CPU has neither).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "formats/quant/w8a8_quant.h"
#include "runtime/aligned_bytes.h"
#include "runtime/cpu/int8_kernels.h"
#include "runtime/cpu/uniform_kernels.h"
#include "runtime/linear.h"

namespace fsq {

struct PackedLinear;

class Int8Linear final : public Linear {
 public:
  // codes: the stored w8pcs words ([rows, ceil(cols / 4)] little-endian, byte q + 128 per
  // weight, as FORMAT.md stores them); scales: fp16 [rows]; static_scale is used only with
  // PerTensor. Throws fsq::Error when a size disagrees or a code is -128.
  Int8Linear(int64_t rows, int64_t cols, std::span<const std::byte> codes, std::span<const std::byte> scales,
             ActivationQuant mode, float static_scale, std::optional<at::Tensor> bias, std::string method);

  at::Tensor forward(const at::Tensor& x) const override;
  bool supports_rows() const override { return true; }
  void forward_rows(const float* x, int64_t m, float* y) const override;
  int64_t in_features() const override { return cols_; }
  int64_t out_features() const override { return rows_; }
  // "w8a8 [576 x 576] smoothquant, int8 matmul, per-token int8 activations"
  std::string describe() const override;
  int64_t weight_bytes() const override;  // int8 codes + fp16 scales + bias

  void set_cpu_isa(cpu::CpuIsa isa);  // throws fsq::Error when this CPU lacks it
  cpu::CpuIsa cpu_isa() const { return isa_; }
  ActivationQuant act_quant() const { return mode_; }
  // For the integer-only path (runtime/intonly_layer.h): the prepared int8 weights, their
  // per-output-channel scales, the static activation scale (PerTensor) and the bias.
  const cpu::Int8PreparedView& prepared() const { return view_; }
  const std::vector<float>& weight_scales() const { return scales_; }
  float static_scale() const { return static_scale_; }
  const std::optional<at::Tensor>& bias() const { return bias_; }

 private:
  // PerBlock: y = x W^T through the per-block kernels.
  void forward_blocks(const float* x, int64_t m, float* y) const;

  int64_t rows_ = 0, cols_ = 0;
  ActivationQuant mode_;
  float static_scale_ = 0;
  std::vector<float> scales_;  // [rows], widened from fp16
  AlignedBytes prepared_;
  cpu::Int8PreparedView view_;  // PerToken / PerTensor
  AlignedBytes words_, half_scales_;  // PerBlock: the stored w8pcs codes and fp16 scales
  cpu::UniformWeightsView blocks_;
  std::optional<at::Tensor> bias_;  // f32 [rows]
  std::string method_;
  cpu::CpuIsa isa_;
};

// An Int8Linear holding copies of an opened checkpoint's W8A8 linear.
std::unique_ptr<Linear> make_int8_linear(const PackedLinear& packed);

}  // namespace fsq
