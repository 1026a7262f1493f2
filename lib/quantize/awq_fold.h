// AWQ's per-input-channel scales s, folded so the fp block computes the same function:
// the quantized linears take W * s (their input columns scaled up), and whatever produces
// their input divides it by s, either a preceding RMSNorm (gain / s) or a preceding linear
// (its output rows / s, bias too). Pure functions returning float32 tensors; the pipeline
// stores them in its own dtype.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

namespace fsq {

// W [out, in] * s [in]: the weights to quantize.
at::Tensor scale_input_columns(const at::Tensor& weight, const at::Tensor& scales);

// RMSNorm gain [in] / s [in].
at::Tensor fold_scales_into_norm(const at::Tensor& norm_weight, const at::Tensor& scales);

struct LinearWeights {
  at::Tensor weight;               // [out, in]
  std::optional<at::Tensor> bias;  // [out]
};

// A preceding linear whose output is the scaled linears' input: rows (and bias) / s [out].
LinearWeights fold_scales_into_output_rows(const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                                           const at::Tensor& scales);

}  // namespace fsq
