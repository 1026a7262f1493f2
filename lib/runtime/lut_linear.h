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
#include "runtime/packed_kernel_linear.h"

namespace fsq {

struct PackedLinear;

// y = x W'^T + b, W' = dequantize_lut(matrix), with the weights kept as stored (packed
// codes, fp16 centroids, CSR part) and run through the CPU kernels of
// runtime/cpu/lut_kernels.h (PackedKernelLinear): the fused LUT GEMV for up to
// cpu::kMaxGemvRows rows of x, blocks of dequantized rows and a GEMM for more (packed_forward.h).
// The stored bytes of a LUT linear as FORMAT.md lays them out (sparse spans empty when
// dense-only): what a packed checkpoint maps, copied once, never unpacked.
struct LutStoredBytes {
  std::span<const std::byte> words, lut, row_ptr, col, val;
  cpu::LutColType col_type = cpu::LutColType::U16;
};

class LutLinear final : public PackedKernelLinear {
 public:
  // Validates `matrix` and packs its codes; bias (any floating dtype, [rows]) is kept as
  // f32. `method` only labels describe().
  LutLinear(const LutMatrix& matrix, std::optional<at::Tensor> bias, std::string method);
  // Copies stored bytes (a packed checkpoint's, whose reader checked the values); sizes and
  // the CSR part are checked here by the kernels' own checks.
  LutLinear(int bits, int64_t rows, int64_t cols, const LutStoredBytes& bytes, std::optional<at::Tensor> bias,
            std::string method);

  std::string describe() const override;  // "lut4 [576 x 576] squeezellm, 1490 sparse"
  int64_t weight_bytes() const override;  // as stored: packed codes + centroids + CSR + bias
  LinearDeviceView device_view() const override;  // Kind::Lut

  // The int8 paths (set_int8_decode, set_int8_prefill) quantize x and round the centroids to
  // int8: cpu::lut_gemv_q8 (AVX-512 VNNI, 3-bit codes also VBMI; 4-bit codes on AVX2 too) and
  // cpu::lut_gemm_q8 (AVX-512 VNNI; 3-bit codes also VBMI), as QuantLinear does for the
  // uniform types.
  // The weights as the kernels see them (valid while this object lives).
  cpu::LutWeightsView weights_view() const;

 private:
  void adopt(const LutStoredBytes& bytes, std::optional<at::Tensor> bias);
  cpu::KernelStatus multiply(Kernel kernel, const float* x, int64_t m, float* y) const override;
  bool int8_supported(Kernel kernel) const override;
  cpu::KernelStatus dequantize_rows(int64_t row0, int64_t nrows, float* out) const override;
  // Makes q8_tables_ and q8_scales_ the first time an int8 path turns on.
  void prepare_int8() override;

  int bits_ = 4;
  int64_t nnz_ = 0, words_per_row_ = 0;
  AlignedBytes words_, lut_, row_ptr_, col_, val_;  // the last three null when dense-only
  cpu::LutColType col_type_ = cpu::LutColType::U16;
  int64_t packed_bytes_ = 0;

  std::vector<uint8_t> q8_tables_;  // cpu::prepare_lut_q8_tables, made when an int8 path turns on
  std::vector<float> q8_scales_;
  std::vector<uint16_t> q8_sparse_rows_;  // cpu::prepare_lut_q8_sparse_rows, with the tables
  cpu::LutQ8SliceCopy q8_slices_;         // the CSR part as the AVX-512 GEMV's slices, with the tables
  cpu::LutQ8Tables q8_view() const;
};

// A LutLinear from an opened packed checkpoint's LUT linear.
std::unique_ptr<LutLinear> make_lut_linear(const PackedLinear& packed);

}  // namespace fsq
