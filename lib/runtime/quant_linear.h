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

namespace fsq {

struct PackedLinear;

// y = x W'^T + b, W' the dequantized packed weights [rows = out, cols = in].
// forward: x [..., cols] in f32, bf16 or f16 on the CPU (computed in f32, returned in x's
// dtype). Up to cpu::kMaxGemvRows rows of x run the fused dequantize + GEMV kernel; more
// rows dequantize blocks of weight rows into an f32 scratch and multiply with at::mm.
class QuantLinear final : public Linear {
 public:
  // Copies the packed data (bytes as FORMAT.md stores them: words [rows, words_per_row],
  // fp16 scales [rows, groups], uint8 zeros [rows, groups] or empty when symmetric) into
  // 64-byte aligned buffers, and the bias (any floating dtype, [rows]) as f32. `method`
  // only labels describe(). Throws fsq::Error when a size disagrees with quant/rows/cols.
  QuantLinear(const UniformQuant& quant, int64_t rows, int64_t cols, std::span<const std::byte> words,
              std::span<const std::byte> scales, std::span<const std::byte> zeros, std::optional<at::Tensor> bias,
              std::string method);

  at::Tensor forward(const at::Tensor& x) const override;
  bool supports_rows() const override { return true; }
  void forward_rows(const float* x, int64_t m, float* y) const override;
  int64_t in_features() const override { return cols_; }
  int64_t out_features() const override { return rows_; }
  std::string describe() const override;     // "w4g128a [576 x 576] awq"
  int64_t weight_bytes() const override;     // packed words + scales + zeros + bias

  // The kernel variant forward() uses: cpu::selected_cpu_isa() unless set here (tests,
  // benchmarks). Throws fsq::Error when this CPU lacks `isa`.
  void set_cpu_isa(cpu::CpuIsa isa);
  cpu::CpuIsa cpu_isa() const { return isa_; }
  // Asks forward_rows (the decode fast path) to quantize x to int8 and multiply in
  // integers (cpu::uniform_gemv_q8). It does so only where the kernel supports this type
  // on this CPU; int8_decode() says whether it does. forward() stays exact.
  void set_int8_decode(bool on);
  bool int8_decode() const { return int8_decode_; }
  // Asks forward() to multiply inputs of more than cpu::kMaxGemvRows rows (prompts,
  // perplexity windows) on int8 activations (cpu::uniform_gemm_q8) where the kernel supports
  // this type on this CPU; int8_prefill() says whether it does. Off: dequantize + f32 GEMM.
  void set_int8_prefill(bool on);
  bool int8_prefill() const { return int8_prefill_; }
  const UniformQuant& quant() const { return quant_; }
  // The packed weights as the kernels see them (valid while this object lives).
  cpu::UniformWeightsView weights_view() const;
  // Writes weight row `row` dequantized to out[0, cols): a quantized embedding's lookup.
  void dequantize_row(int64_t row, float* out) const;
  // Adds the bias (if any) to m rows of forward_rows' output y.
  void add_bias(int64_t m, float* y) const;
  bool has_bias() const { return bias_.has_value(); }

 private:
  UniformQuant quant_;
  int64_t rows_ = 0, cols_ = 0, words_per_row_ = 0;
  AlignedBytes words_, scales_, zeros_;  // zeros_ null when symmetric
  int64_t packed_bytes_ = 0;
  std::optional<at::Tensor> bias_;  // f32 [rows]
  std::string method_;
  cpu::CpuIsa isa_;
  bool want_int8_decode_ = false, int8_decode_ = false;
  bool want_int8_prefill_ = false, int8_prefill_ = false;
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
