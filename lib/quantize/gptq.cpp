#include "quantize/gptq.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/error.h"

namespace fsq {
namespace {

constexpr const char* kWho = "gptq";

}  // namespace

at::Tensor gptq_inverse_hessian_factor(at::Tensor h, double damp) {
  // An input that never fired has a zero row and column: a unit diagonal keeps H invertible
  // and leaves that column's error where it is.
  const at::Tensor dead = h.diagonal() == 0;
  h = h + at::diag(dead.to(at::kDouble));
  const double mean_diagonal = h.diagonal().mean().item<double>();
  h = h + at::eye(h.size(0), h.options()) * (damp * mean_diagonal);
  try {
    const at::Tensor h_inverse = at::cholesky_inverse(at::linalg_cholesky(h));
    return at::linalg_cholesky(h_inverse, /*upper=*/true).to(at::kFloat);
  } catch (const c10::Error&) {
    throw Error(kWho, "the calibration inputs' Hessian is not positive definite even with damping " +
                          std::to_string(damp) + "; calibrate on more tokens");
  }
}

at::Tensor gptq_hessian(const at::Tensor& x) {
  const at::Tensor rows = x.reshape({-1, x.size(-1)}).to(at::kFloat);
  return rows.t().matmul(rows).to(at::kDouble);
}

GroupQuantized gptq_quantize(const at::Tensor& w, const at::Tensor& hessian, const UniformQuant& q,
                             const GptqOptions& options) {
  // Validates the shape, the group size and finiteness, as the round-to-nearest path does.
  const GroupQuantized nearest = quantize_groups(w, q);
  const int64_t rows = w.size(0), cols = w.size(1);
  if (hessian.dim() != 2 || hessian.size(0) != cols || hessian.size(1) != cols)
    throw Error(kWho, "Hessian does not match the weight's " + std::to_string(cols) + " input columns");
  if (!at::isfinite(hessian).all().item<bool>()) throw Error(kWho, "Hessian is not all finite");
  if (options.damp <= 0 || options.block <= 0) throw Error(kWho, "damping and block size must be positive");

  at::Tensor W = w.to(at::kFloat).clone();
  const at::Tensor U = gptq_inverse_hessian_factor(hessian.to(at::kDouble), options.damp);
  const at::Tensor u_diagonal = U.diagonal().contiguous();
  const std::vector<float> pivot(u_diagonal.data_ptr<float>(), u_diagonal.data_ptr<float>() + cols);

  const int64_t group_cols = q.group_cols(cols);
  const bool per_channel = group_cols == cols;
  // A block never straddles two groups, so a group's params are read off up-to-date columns.
  const int64_t block = per_channel ? options.block : group_cols;
  const double half = double(1 << (q.bits - 1));
  at::Tensor codes = at::empty({rows, cols}, at::kFloat);
  at::Tensor scales = nearest.scales.clone(), zeros = nearest.zeros.clone();
  // Per channel: round-to-nearest's params, taken from w before any update.
  GroupParams params = per_channel ? GroupParams{nearest.scales, nearest.zeros.to(at::kFloat)} : GroupParams{};

  for (int64_t b0 = 0; b0 < cols; b0 += block) {
    const int64_t b1 = std::min(b0 + block, cols), n = b1 - b0;
    if (!per_channel) {
      params = group_params(W.slice(1, b0, b1), q);
      scales.select(1, b0 / group_cols).copy_(params.scale.squeeze(1));
      zeros.select(1, b0 / group_cols).copy_(params.zero.squeeze(1).to(at::kByte));
    }
    at::Tensor W1 = W.slice(1, b0, b1).clone();
    at::Tensor errors = at::zeros({rows, n}, at::kFloat);
    const at::Tensor U1 = U.slice(0, b0, b1).slice(1, b0, b1);
    for (int64_t j = 0; j < n; ++j) {
      const at::Tensor column = W1.slice(1, j, j + 1);
      at::Tensor c = float_codes(column, params, q);
      if (q.symmetric) c = c.clamp(1, 2 * half - 1);  // never -2^(bits-1): as round-to-nearest
      codes.slice(1, b0 + j, b0 + j + 1).copy_(c);
      const at::Tensor err = ((column - (c - params.zero) * params.scale) / pivot[b0 + j]).squeeze(1);
      if (j + 1 < n) W1.slice(1, j + 1, n).addr_(err, U1.select(0, j).slice(0, j + 1, n), 1, -1);
      errors.select(1, j).copy_(err);
    }
    if (b1 < cols) W.slice(1, b1, cols).addmm_(errors, U.slice(0, b0, b1).slice(1, b1, cols), 1, -1);
  }
  return {codes.to(at::kByte), scales, zeros};
}

double gptq_loss(const at::Tensor& w, const at::Tensor& wq, const at::Tensor& hessian) {
  const at::Tensor d = (w.to(at::kDouble) - wq.to(at::kDouble));
  return (d.matmul(hessian.to(at::kDouble)) * d).sum().item<double>();
}

}  // namespace fsq
