// GPTQ (Frantar et al. 2023): uniform quantization of a weight matrix one input column at
// a time, each column's rounding error spread over the columns not yet quantized through
// the inverse Hessian of the layer's reconstruction loss ||X W^T - X Wq^T||^2, H = X^T X.
// With H diagonal (uncorrelated inputs) nothing is spread and the result is exactly
// quantize_groups' round-to-nearest.
#pragma once

#include <ATen/core/Tensor.h>

#include "quantize/fake_quant.h"

namespace fsq {

struct GptqOptions {
  // Added to H's diagonal, as a fraction of its mean diagonal: keeps the Cholesky factor
  // well conditioned when calibration inputs are nearly collinear (GPTQ's 1 %).
  double damp = 0.01;
  // Columns per lazy-update block: the error of a block reaches the later columns in one
  // matrix product.
  int64_t block = 128;
};

// X^T X of inputs x [..., cols] (float64 [cols, cols]): the Hessian GPTQ needs, summed over
// every row of x.
at::Tensor gptq_hessian(const at::Tensor& x);

// w [rows, cols] (any floating dtype, cols a multiple of the group size), hessian [cols,
// cols] from gptq_hessian over the calibration inputs of w's linear. A group's scale and
// zero point are taken from its columns as they stand when GPTQ reaches the group (after
// the updates from earlier groups); per-channel types (group size 0) take them from w.
// Symmetric codes stay within +-(2^(bits-1) - 1), as round-to-nearest's do. Inputs that
// never fire (zero diagonal) are quantized to nearest. Throws fsq::Error on mismatched
// shapes or non-finite weights.
GroupQuantized gptq_quantize(const at::Tensor& w, const at::Tensor& hessian, const UniformQuant& q,
                             const GptqOptions& options = {});

// The upper Cholesky factor U of H^-1 (H^-1 = U^T U), float32, after `damp` x the mean
// diagonal is added to H (and a unit diagonal for inputs that never fired): row j of U
// carries column j's rounding error to the columns after it. Throws fsq::Error when H is
// not positive definite even so.
at::Tensor gptq_inverse_hessian_factor(at::Tensor hessian, double damp);

// trace((w - wq) H (w - wq)^T): the reconstruction loss of quantized weights wq on the
// inputs H came from (for reports and tests).
double gptq_loss(const at::Tensor& w, const at::Tensor& wq, const at::Tensor& hessian);

}  // namespace fsq
