#include "runtime/lut_linear.h"

#include <ATen/ATen.h>

#include <cstring>

#include "common/error.h"
#include "formats/packed_checkpoint.h"
#include "formats/quant/bitpack.h"
#include "runtime/torch_bridge.h"

namespace fsq {

LutLinear::LutLinear(const LutMatrix& m, std::optional<at::Tensor> bias, std::string method)
    : bits_(m.bits), rows_(m.rows), cols_(m.cols), nnz_(m.nnz()), method_(std::move(method)) {
  validate_lut_matrix(m, "LUT linear");
  weight_ = at::empty({rows_, cols_}, at::kFloat);
  dequantize_lut(m, weight_.data_ptr<float>());
  if (bias) {
    if (bias->numel() != rows_)
      throw Error("LUT linear", "bias has " + std::to_string(bias->numel()) + " values for " + std::to_string(rows_) +
                                    " rows");
    bias_ = bias->to(at::kFloat).contiguous();
  }
}

at::Tensor LutLinear::forward(const at::Tensor& x) const {
  if (x.size(-1) != cols_)
    throw Error("LUT linear", "input has " + std::to_string(x.size(-1)) + " features, expected " + std::to_string(cols_));
  const at::Tensor y = bias_ ? at::linear(x.to(at::kFloat), weight_, *bias_) : at::linear(x.to(at::kFloat), weight_);
  return y.to(x.scalar_type());
}

std::string LutLinear::describe() const {
  std::string s = lut_quant_name(bits_) + " [" + std::to_string(rows_) + " x " + std::to_string(cols_) + "]";
  if (!method_.empty()) s += " " + method_;
  if (nnz_ > 0) s += ", " + std::to_string(nnz_) + " sparse";
  return s;
}

int64_t LutLinear::weight_bytes() const {
  const int64_t codes = rows_ * packed_words_per_row(bits_, cols_) * 4;
  const int64_t lut = rows_ * (int64_t{1} << bits_) * 2;
  const int64_t sparse = nnz_ > 0 ? nnz_ * (2 + (cols_ <= 65536 ? 2 : 4)) + (rows_ + 1) * 4 : 0;
  return codes + lut + sparse + (bias_ ? rows_ * 4 : 0);
}

std::unique_ptr<Linear> make_lut_linear(const PackedLinear& packed) {
  std::optional<at::Tensor> bias;
  if (packed.bias) bias = tensor_from_view(*packed.bias, at::kFloat, c10::Device(c10::kCPU));
  return std::make_unique<LutLinear>(unpack_lut_linear(packed), std::move(bias), packed.method);
}

}  // namespace fsq
