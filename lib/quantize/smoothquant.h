// SmoothQuant (Xiao et al. 2023): per input channel j of a linear group, the smoothing
// factor s_j = max|X_j|^alpha / max|W_j|^(1 - alpha) moves quantization difficulty from the
// activations (outlier channels) into the weights. The group's weights take W * s (their
// input columns scaled up) and the producer of X divides by s (folded into the preceding
// RMSNorm, or into the producing linear's rows: awq_fold.h), so the fp function is
// unchanged. Then W8A8: weights int8 per output channel, activations int8 per token or per
// tensor (formats/quant/w8a8_quant.h). These are the at::Tensor helpers the pass uses and
// the tests check.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "formats/quant/w8a8_quant.h"

namespace fsq {

// The alphas `--alpha auto` tries per linear group: 0.30, 0.35, ..., 0.90.
const std::vector<double>& smoothquant_alpha_grid();

// s [in] = clamp(x_absmax^alpha / w_absmax^(1 - alpha), kMinSmoothScale, inf) in float32;
// channels where either absmax is 0 (dead channels) get 1. x_absmax, w_absmax: [in].
at::Tensor smoothing_scales(const at::Tensor& x_absmax, const at::Tensor& w_absmax, double alpha);
inline constexpr double kMinSmoothScale = 1e-5;

// max over rows and over every weight of the group of |W[:, j]|: [in] float32.
at::Tensor weight_column_absmax(const std::vector<at::Tensor>& weights);

// Activations through int8 and back exactly as runtime/cpu/int8_kernels.h quantizes them:
// x [tokens, in] float32; PerToken: scale_i = max|x_i| / 127 per row; PerTensor: the
// given scale. Codes clamp(nearbyint(x * (1 / scale)), -127, 127), returned times scale.
// PerBlock: per row and block of kW8A8BlockCols columns, d = max|x_block| / 127 and codes
// nearbyint(x / d), as runtime/cpu/uniform_q8_kernels.h's quantize_q8_row.
at::Tensor fake_quantize_activations(const at::Tensor& x, ActivationQuant mode, float static_scale = 0.0f);

// The static per-tensor scale of activations whose largest magnitude is `absmax`:
// absmax / 127 (a tiny positive floor for an all-zero input keeps the scale valid).
float static_activation_scale(float absmax);

// Output MSE of the group's linears under W8A8 after smoothing by s, against the fp
// outputs: x [tokens, in] (fp inputs, not yet divided by s), weights [out_j, in].
double w8a8_output_error(const at::Tensor& x, const std::vector<at::Tensor>& weights, const at::Tensor& s,
                         ActivationQuant mode);

}  // namespace fsq
