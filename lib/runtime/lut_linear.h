// A linear layer with LUT-quantized weights (formats/quant/lut_quant.h: per-row fp16
// centroids, 3/4-bit codes, optional CSR corrections), as SqueezeLLM checkpoints store them.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "formats/quant/lut_quant.h"
#include "runtime/aligned_bytes.h"
#include "runtime/cpu/lut_kernels.h"
#include "runtime/cpu/lut_q8_kernels.h"  // LutQ8Tables
#include "runtime/cpu/lut_q8_slice_copy.h"
#include "runtime/linear.h"

namespace fsq {

struct PackedLinear;

// y = x W'^T + b, W' = dequantize_lut(matrix), with the weights kept as stored (packed
// codes, fp16 centroids, CSR part) and run through the CPU kernels of
// runtime/cpu/lut_kernels.h: the fused LUT GEMV for up to cpu::kMaxGemvRows rows of x,
// blocks of dequantized rows and at::mm for more (packed_forward.h).
// The stored bytes of a LUT linear as FORMAT.md lays them out (sparse spans empty when
// dense-only): what a packed checkpoint maps, copied once, never unpacked.
struct LutStoredBytes {
  std::span<const std::byte> words, lut, row_ptr, col, val;
  cpu::LutColType col_type = cpu::LutColType::U16;
};

class LutLinear final : public Linear {
 public:
  // Validates `matrix` and packs its codes; bias (any floating dtype, [rows]) is kept as
  // f32. `method` only labels describe().
  LutLinear(const LutMatrix& matrix, std::optional<at::Tensor> bias, std::string method);
  // Copies stored bytes (a packed checkpoint's, whose reader checked the values); sizes and
  // the CSR part are checked here by the kernels' own checks.
  LutLinear(int bits, int64_t rows, int64_t cols, const LutStoredBytes& bytes, std::optional<at::Tensor> bias,
            std::string method);

  at::Tensor forward(const at::Tensor& x) const override;
  bool supports_rows() const override { return true; }
  void forward_rows(const float* x, int64_t m, float* y) const override;
  int64_t in_features() const override { return cols_; }
  int64_t out_features() const override { return rows_; }
  std::string describe() const override;  // "lut4 [576 x 576] squeezellm, 1490 sparse"
  int64_t weight_bytes() const override;  // as stored: packed codes + centroids + CSR + bias

  // The kernel variant forward() uses: cpu::selected_cpu_isa() unless set here (tests,
  // benchmarks). Throws fsq::Error when this CPU lacks `isa`.
  void set_cpu_isa(cpu::CpuIsa isa);
  // The weights as the kernels see them (valid while this object lives).
  cpu::LutWeightsView weights_view() const;
  bool has_bias() const { return bias_.has_value(); }
  // Asks forward_rows (the decode fast path) to quantize x and the centroids to int8 and
  // multiply in integers (cpu::lut_gemv_q8). It does so only where that kernel supports this
  // matrix on this CPU (AVX-512 VNNI, 3-bit codes also VBMI; 4-bit codes on AVX2 too);
  // int8_decode() says whether it does. forward() stays exact.
  void set_int8_decode(bool on);
  bool int8_decode() const { return int8_decode_; }
  // Asks forward() to multiply more than cpu::kMaxGemvRows rows (prompts, perplexity windows)
  // on int8 activations and int8 centroids (cpu::lut_gemm_q8: AVX-512 VNNI; 3-bit codes also VBMI)
  // instead of dequantizing into an f32 GEMM, as QuantLinear::set_int8_prefill does for the
  // uniform types; int8_prefill() says whether it does.
  void set_int8_prefill(bool on);
  bool int8_prefill() const { return int8_prefill_; }

 private:
  void adopt(const LutStoredBytes& bytes, std::optional<at::Tensor> bias);

  int bits_ = 4;
  int64_t rows_ = 0, cols_ = 0, nnz_ = 0, words_per_row_ = 0;
  AlignedBytes words_, lut_, row_ptr_, col_, val_;  // the last three null when dense-only
  cpu::LutColType col_type_ = cpu::LutColType::U16;
  int64_t packed_bytes_ = 0;
  std::optional<at::Tensor> bias_;
  std::string method_;
  cpu::CpuIsa isa_;
  // Makes q8_tables_ and q8_scales_ the first time an int8 path turns on.
  void prepare_q8_tables();

  bool want_int8_decode_ = false, int8_decode_ = false;
  bool want_int8_prefill_ = false, int8_prefill_ = false;
  std::vector<uint8_t> q8_tables_;  // cpu::prepare_lut_q8_tables, made when an int8 path turns on
  std::vector<float> q8_scales_;
  std::vector<uint16_t> q8_sparse_rows_;  // cpu::prepare_lut_q8_sparse_rows, with the tables
  cpu::LutQ8SliceCopy q8_slices_;         // the CSR part as the AVX-512 GEMV's slices, with the tables
  cpu::LutQ8Tables q8_view() const;
};

// A LutLinear from an opened packed checkpoint's LUT linear.
std::unique_ptr<LutLinear> make_lut_linear(const PackedLinear& packed);

}  // namespace fsq
