#include "quantize/fake_quant.h"

#include <ATen/ATen.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"

namespace fsq {
namespace {

constexpr double kMinRange = 1e-5;  // uniform_quant.h: max(range, 1e-5) keeps scale > 0

void check_quant(const UniformQuant& q) {
  if (q.bits < 2 || q.bits > 8)
    throw Error("uniform quantization", "unsupported bit width", "2..8", std::to_string(q.bits));
  if (q.group_size < 0)
    throw Error("uniform quantization", "negative group size", ">= 0", std::to_string(q.group_size));
}

int64_t group_count(const at::Tensor& w, const UniformQuant& q) {
  check_quant(q);
  if (w.dim() != 2)
    throw Error("uniform quantization", "weight must be a matrix", "2 dimensions",
                std::to_string(w.dim()));
  const int64_t cols = w.size(1);
  const int64_t group_cols = q.group_cols(cols);
  if (group_cols <= 0 || cols % group_cols != 0)
    throw Error("uniform quantization", "columns are not a multiple of the group size",
                "a multiple of " + std::to_string(group_cols), std::to_string(cols));
  return cols / group_cols;
}

// [rows, cols] -> float32 [rows, groups, group_cols].
at::Tensor as_groups(const at::Tensor& w, const UniformQuant& q) {
  const int64_t groups = group_count(w, q);
  return w.to(at::kFloat).reshape({w.size(0), groups, w.size(1) / groups});
}

// A 0-dim tensor on w's device rather than a Scalar: CUDA divides by a CPU scalar through
// its reciprocal, which would break bit-exactness with the scalar reference.
at::Tensor device_constant(double value, const at::Tensor& like) {
  return at::scalar_tensor(value, like.options().dtype(at::kFloat));
}

at::Tensor fp16_round(const at::Tensor& t) { return t.to(at::kHalf).to(at::kFloat); }

double code_max(const UniformQuant& q) {
  return q.symmetric ? double((1 << (q.bits - 1)) - 1) : double((1 << q.bits) - 1);
}

}  // namespace

GroupParams group_params(const at::Tensor& grouped, const UniformQuant& q) {
  const at::Tensor qmax = device_constant(code_max(q), grouped);
  if (q.symmetric) {
    at::Tensor scale = fp16_round(grouped.abs().amax(-1, true).clamp_min(kMinRange) / qmax);
    return {scale, at::full_like(scale, double(1 << (q.bits - 1)))};
  }
  const at::Tensor lo = grouped.amin(-1, true).clamp_max(0);  // the range always includes 0
  const at::Tensor hi = grouped.amax(-1, true).clamp_min(0);
  at::Tensor scale = fp16_round((hi - lo).clamp_min(kMinRange) / qmax);
  at::Tensor zero = at::round(-lo / scale).clamp(0, code_max(q));
  return {scale, zero};
}

at::Tensor float_codes(const at::Tensor& grouped, const GroupParams& p, const UniformQuant& q) {
  if (q.symmetric) {
    const double half = double(1 << (q.bits - 1));
    return at::round(grouped / p.scale).clamp(-half, half - 1) + half;
  }
  return (at::round(grouped / p.scale) + p.zero).clamp(0, code_max(q));
}

GroupQuantized quantize_groups(const at::Tensor& w, const UniformQuant& q) {
  const at::Tensor grouped = as_groups(w, q);
  if (!at::isfinite(grouped).all().item<bool>()) throw Error("quantize_groups", "weights are not all finite");
  const GroupParams p = group_params(grouped, q);
  if (!at::isfinite(p.scale).all().item<bool>())
    throw Error("quantize_groups", "group range too large for an fp16 scale");
  return {float_codes(grouped, p, q).to(at::kByte).reshape(w.sizes()), p.scale.squeeze(-1),
          p.zero.to(at::kByte).squeeze(-1)};
}

namespace {

// A tensor's elements (element type T, any device) copied into a host vector.
template <typename T>
std::vector<T> host_vector(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kCPU).contiguous();
  std::vector<T> out(static_cast<size_t>(c.numel()));
  std::memcpy(out.data(), c.data_ptr(), out.size() * sizeof(T));
  return out;
}

}  // namespace

QuantizedMatrix to_quantized_matrix(const GroupQuantized& g, const UniformQuant& q) {
  QuantizedMatrix m;
  m.quant = q;
  m.rows = g.codes.size(0);
  m.cols = g.codes.size(1);
  m.codes = host_vector<uint8_t>(g.codes.to(at::kByte));
  m.scales = host_vector<uint16_t>(g.scales.to(at::kHalf));  // exact: the values are fp16 already
  if (!q.symmetric) m.zeros = host_vector<uint8_t>(g.zeros.to(at::kByte));
  return m;
}

at::Tensor dequantize_groups(const GroupQuantized& g, const UniformQuant& q) {
  const at::Tensor grouped = as_groups(g.codes, q);
  const int64_t groups = grouped.size(1);
  if (g.scales.sizes() != at::IntArrayRef{g.codes.size(0), groups} || g.zeros.sizes() != g.scales.sizes())
    throw Error("uniform dequantization", "scales/zeros do not match the codes' groups");
  const at::Tensor scale = g.scales.to(at::kFloat).unsqueeze(-1);
  const at::Tensor zero = g.zeros.to(at::kFloat).unsqueeze(-1);
  return ((grouped - zero) * scale).reshape(g.codes.sizes());
}

at::Tensor fake_quantize(const at::Tensor& w, const UniformQuant& q) {
  const at::Tensor grouped = as_groups(w, q);
  const GroupParams p = group_params(grouped, q);
  return ((float_codes(grouped, p, q) - p.zero) * p.scale).reshape(w.sizes());
}

at::Tensor clip_groups(const at::Tensor& w, const at::Tensor& clip_max, const UniformQuant& q) {
  const at::Tensor grouped = as_groups(w, q);
  if (clip_max.sizes() != at::IntArrayRef{grouped.size(0), grouped.size(1)})
    throw Error("clip_groups", "clip_max must hold one value per (row, group)");
  const at::Tensor hi = clip_max.to(at::kFloat).unsqueeze(-1);
  return at::minimum(at::maximum(grouped, -hi), hi).reshape(w.sizes());
}

at::Tensor fake_quantize_clipped(const at::Tensor& w, const UniformQuant& q, const at::Tensor& clip_max) {
  return fake_quantize(clip_groups(w, clip_max, q), q);
}

at::Tensor rtn_quantize(const at::Tensor& w, const UniformQuant& q) { return fake_quantize(w, q); }

}  // namespace fsq
