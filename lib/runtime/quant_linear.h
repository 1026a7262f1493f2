// A linear layer whose weights stay packed (uniform quant types, FORMAT.md) and run through
// the CPU kernels of runtime/cpu/uniform_kernels.h. A CUDA backend comes later.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "formats/quant/uniform_quant.h"
#include "runtime/aligned_bytes.h"
#include "runtime/cpu/uniform_kernels.h"
#include "runtime/linear.h"
#include "runtime/packed_kernel_linear.h"

namespace fsq {

struct PackedLinear;

// y = x W'^T + b, W' the dequantized packed weights [rows = out, cols = in], on the uniform
// kernels (PackedKernelLinear: the fused dequantize + GEMV for up to cpu::kMaxGemvRows rows
// of x; more rows dequantize blocks of weight rows into an f32 scratch and multiply with a GEMM).
class QuantLinear final : public PackedKernelLinear {
 public:
  // Copies the packed data (bytes as FORMAT.md stores them: words [rows, words_per_row],
  // fp16 scales [rows, groups], uint8 zeros [rows, groups] or empty when symmetric) into
  // 64-byte aligned buffers, and the bias (any floating dtype, [rows]) as f32. `method`
  // only labels describe(). Throws fsq::Error when a size disagrees with quant/rows/cols.
  QuantLinear(const UniformQuant& quant, int64_t rows, int64_t cols, std::span<const std::byte> words,
              std::span<const std::byte> scales, std::span<const std::byte> zeros, std::optional<at::Tensor> bias,
              std::string method);

  std::string describe() const override;     // "w4g128a [576 x 576] awq"
  int64_t weight_bytes() const override;     // packed words + scales + zeros + bias
  LinearDeviceView device_view() const override;  // Kind::Uniform

  // The int8 paths (set_int8_decode, set_int8_prefill): cpu::uniform_gemv_q8 and
  // cpu::uniform_gemm_q8, as llama.cpp's Q8_0 activations.
  const UniformQuant& quant() const { return quant_; }
  // The packed weights as the kernels see them (valid while this object lives).
  cpu::UniformWeightsView weights_view() const;
  // Whether QSpec's draft mode (runtime/activation_mode.h) runs this matrix on the W4A4 GEMV.
  bool int4_supported() const override;
  // Writes weight row `row` dequantized to out[0, cols): a quantized embedding's lookup.
  void dequantize_row(int64_t row, float* out) const;

 private:
  cpu::KernelStatus multiply(Kernel kernel, const float* x, int64_t m, float* y) const override;
  cpu::KernelStatus dequantize_rows(int64_t row0, int64_t nrows, float* out) const override;
  bool int8_supported(Kernel kernel) const override;

  UniformQuant quant_;
  int64_t words_per_row_ = 0;
  AlignedBytes words_, scales_, zeros_;  // zeros_ null when symmetric
  int64_t packed_bytes_ = 0;
};

// Runs linears that read the same x (a layer's q/k/v, or gate/up) as
// forward_rows(x, m, ys[j]) each, in one pass (cpu::uniform_gemv_q8_together: one int8
// panel, one parallel region, the same outputs bit for bit) when all are QuantLinears on
// the int8 decode path with one panel layout and m <= cpu::kMaxGemvRows. Returns false,
// having run nothing, otherwise: the caller then runs them one by one.
bool forward_rows_together(std::span<const Linear* const> linears, const float* x, int64_t m,
                           std::span<float* const> ys);

// A QuantLinear holding copies of an opened packed checkpoint's linear (the checkpoint may
// be closed afterwards). Throws fsq::Error on a tensor whose dtype or size is unexpected.
std::unique_ptr<QuantLinear> make_quant_linear(const PackedLinear& packed);

}  // namespace fsq
