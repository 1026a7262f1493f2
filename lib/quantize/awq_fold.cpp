#include "quantize/awq_fold.h"

#include <ATen/ATen.h>

#include <string>

#include "common/error.h"

namespace fsq {
namespace {

// scales must be a vector as long as dimension `dim` of `t`.
void check_scales(const char* where, const at::Tensor& t, int64_t dim, const at::Tensor& scales) {
  if (t.dim() <= dim || scales.dim() != 1 || scales.size(0) != t.size(dim))
    throw Error(where, "scales do not match the tensor", std::to_string(t.dim() > dim ? t.size(dim) : 0) + " scales",
                std::to_string(scales.numel()));
}

void check_matrix(const char* where, const at::Tensor& w) {
  if (w.dim() != 2) throw Error(where, "weight must be a matrix", "2 dimensions", std::to_string(w.dim()));
}

}  // namespace

at::Tensor scale_input_columns(const at::Tensor& weight, const at::Tensor& scales) {
  check_matrix("scale_input_columns", weight);
  check_scales("scale_input_columns", weight, 1, scales);
  return weight.to(at::kFloat) * scales.to(at::kFloat);
}

at::Tensor fold_scales_into_norm(const at::Tensor& norm_weight, const at::Tensor& scales) {
  if (norm_weight.dim() != 1)
    throw Error("fold_scales_into_norm", "norm weight must be a vector", "1 dimension",
                std::to_string(norm_weight.dim()));
  check_scales("fold_scales_into_norm", norm_weight, 0, scales);
  return norm_weight.to(at::kFloat) / scales.to(at::kFloat);
}

LinearWeights fold_scales_into_output_rows(const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                                           const at::Tensor& scales) {
  check_matrix("fold_scales_into_output_rows", weight);
  check_scales("fold_scales_into_output_rows", weight, 0, scales);
  const at::Tensor s = scales.to(at::kFloat);
  LinearWeights out{weight.to(at::kFloat) / s.unsqueeze(1), std::nullopt};
  if (bias) {
    check_scales("fold_scales_into_output_rows (bias)", *bias, 0, scales);
    out.bias = bias->to(at::kFloat) / s;
  }
  return out;
}

}  // namespace fsq
