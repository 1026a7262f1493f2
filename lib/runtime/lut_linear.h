// A linear layer with LUT-quantized weights (formats/quant/lut_quant.h: per-row fp16
// centroids, 3/4-bit codes, optional CSR corrections), as SqueezeLLM checkpoints store them.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <string>

#include "formats/quant/lut_quant.h"
#include "runtime/linear.h"

namespace fsq {

struct PackedLinear;

// y = x W'^T + b, W' = dequantize_lut(matrix). This first version keeps W' dequantized in
// float32 and multiplies with at::linear: the same numbers the LUT kernels must reproduce,
// not yet their memory or speed.
class LutLinear final : public Linear {
 public:
  // Validates `matrix`; bias (any floating dtype, [rows]) is kept as f32. `method` only
  // labels describe().
  LutLinear(const LutMatrix& matrix, std::optional<at::Tensor> bias, std::string method);

  at::Tensor forward(const at::Tensor& x) const override;
  int64_t in_features() const override { return cols_; }
  int64_t out_features() const override { return rows_; }
  std::string describe() const override;  // "lut4 [576 x 576] squeezellm, 1490 sparse"
  int64_t weight_bytes() const override;  // as stored: packed codes + centroids + CSR + bias

 private:
  int bits_ = 4;
  int64_t rows_ = 0, cols_ = 0, nnz_ = 0;
  at::Tensor weight_;  // f32 [rows, cols], dequantized
  std::optional<at::Tensor> bias_;
  std::string method_;
};

// A LutLinear from an opened packed checkpoint's LUT linear.
std::unique_ptr<Linear> make_lut_linear(const PackedLinear& packed);

}  // namespace fsq
