#include "quantize/smoothquant.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "formats/quant/w8a8_quant.h"
#include "quantize/fake_quant.h"

namespace fsq {
namespace {

constexpr float kInt8Max = 127.0f;
// Smallest static scale stored for an input that was all zeros on the calibration set.
constexpr float kMinStaticScale = 1e-12f;

}  // namespace

const std::vector<double>& smoothquant_alpha_grid() {
  static const std::vector<double> grid = [] {
    std::vector<double> g;
    for (int i = 6; i <= 18; ++i) g.push_back(i * 0.05);
    return g;
  }();
  return grid;
}

at::Tensor smoothing_scales(const at::Tensor& x_absmax, const at::Tensor& w_absmax, double alpha) {
  const at::Tensor xa = x_absmax.to(at::kFloat), wa = w_absmax.to(at::kFloat);
  at::Tensor s = (xa.pow(alpha) / wa.pow(1.0 - alpha)).clamp_min(kMinSmoothScale);
  const at::Tensor dead = (xa == 0).logical_or(wa == 0);
  return at::where(dead, at::ones_like(s), s);
}

at::Tensor weight_column_absmax(const std::vector<at::Tensor>& weights) {
  at::Tensor m;
  for (const at::Tensor& w : weights) {
    at::Tensor col = std::get<0>(w.to(at::kFloat).abs().max(0));
    m = m.defined() ? at::maximum(m, col) : col;
  }
  return m;
}

float static_activation_scale(float absmax) { return std::max(absmax / kInt8Max, kMinStaticScale); }

at::Tensor fake_quantize_activations(const at::Tensor& x, ActivationQuant mode, float static_scale) {
  const at::Tensor xf = x.to(at::kFloat);
  if (mode == ActivationQuant::PerTensor) {
    const float inv = 1.0f / static_scale;
    return (xf * inv).round().clamp(-kInt8Max, kInt8Max) * static_scale;
  }
  if (mode == ActivationQuant::PerBlock) {
    // Per block of 32 columns of a row (the last one may be short, zero-padded here):
    // codes round(x / d), d = amax / 127, as uniform_q8_kernels.h's quantize_q8_row.
    const int64_t cols = xf.size(-1), blocks = (cols + kW8A8BlockCols - 1) / kW8A8BlockCols;
    const at::Tensor rows = xf.reshape({-1, cols});
    const at::Tensor padded = at::constant_pad_nd(rows, {0, blocks * kW8A8BlockCols - cols})
                                  .reshape({rows.size(0), blocks, kW8A8BlockCols});
    const at::Tensor d = std::get<0>(padded.abs().max(-1, /*keepdim=*/true)) / kInt8Max;
    const at::Tensor q = at::where(d == 0, at::zeros_like(padded), (padded / d).round());
    return (q * d).reshape({rows.size(0), blocks * kW8A8BlockCols}).slice(1, 0, cols).reshape(xf.sizes());
  }
  // Per token: inv = 127 / amax and scale = amax / 127 in float32, as the kernels compute
  // them; rows of zeros stay zero.
  const at::Tensor amax = std::get<0>(xf.abs().max(-1, /*keepdim=*/true));
  const at::Tensor zero = amax == 0;
  const at::Tensor inv = at::where(zero, at::zeros_like(amax), kInt8Max / amax);
  const at::Tensor scale = amax / kInt8Max;
  return (xf * inv).round().clamp(-kInt8Max, kInt8Max) * scale;
}

double w8a8_output_error(const at::Tensor& x, const std::vector<at::Tensor>& weights, const at::Tensor& s,
                         ActivationQuant mode) {
  const at::Tensor xs = x.to(at::kFloat) / s;
  float static_scale = 0.0f;
  if (mode == ActivationQuant::PerTensor) static_scale = static_activation_scale(xs.abs().max().item<float>());
  const at::Tensor xq = fake_quantize_activations(xs, mode, static_scale);
  double sum = 0;
  int64_t count = 0;
  for (const at::Tensor& w : weights) {
    const at::Tensor wf = w.to(at::kFloat);
    const at::Tensor ref = at::matmul(x.to(at::kFloat), wf.t());
    const at::Tensor out = at::matmul(xq, fake_quantize(wf * s, kW8A8Weights).t());
    sum += (out - ref).pow(2).sum().item<double>();
    count += ref.numel();
  }
  return count > 0 ? sum / static_cast<double>(count) : 0.0;
}

}  // namespace fsq
