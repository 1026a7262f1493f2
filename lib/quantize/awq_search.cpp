#include "quantize/awq_search.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common/error.h"
#include "quantize/awq_fold.h"
#include "quantize/fake_quant.h"

namespace fsq {
namespace {

constexpr double kMinScale = 1e-4;  // keeps s > 0 for channels that are never active

void check_input(const char* where, const at::Tensor& x, const std::vector<at::Tensor>& weights) {
  if (x.dim() != 2) throw Error(where, "input must be [tokens, in]", "2 dimensions", std::to_string(x.dim()));
  if (weights.empty()) throw Error(where, "no weights to search");
  for (const at::Tensor& w : weights)
    if (w.dim() != 2 || w.size(1) != x.size(1))
      throw Error(where, "weight does not take the input's channels", std::to_string(x.size(1)) + " columns",
                  w.dim() == 2 ? std::to_string(w.size(1)) : std::to_string(w.dim()) + " dimensions");
}

double mse(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kFloat) - b.to(at::kFloat)).pow(2).mean().item<double>();
}

// Every step-th token, at most max_tokens of them: spread over the whole calibration set.
at::Tensor subsample_tokens(const at::Tensor& x, int64_t max_tokens) {
  const int64_t tokens = x.size(0);
  const int64_t step = std::max<int64_t>(1, tokens / max_tokens);
  const at::Tensor strided = x.slice(0, 0, tokens, step);
  return strided.narrow(0, 0, std::min(strided.size(0), max_tokens));
}

// What the clip search needs of its token subsample x [tokens, in], per group g of
// group_cols input columns, to give the mean over tokens of (x_g . d)^2 for a change d of a
// row's group: either the Gram matrices G_g = X_g^T X_g / tokens (then the error is d^T G_g d,
// rows x in x group_cols multiply-adds per grid point) or, for groups as wide as the
// subsample or wider (per-channel rows), the grouped tokens themselves (tokens x rows x in;
// a Gram matrix would also take group_cols^2 floats: 480 MB for a 7B down_proj row).
struct GroupInputs {
  at::Tensor gram;      // [groups, group_cols, group_cols], or undefined
  at::Tensor x_groups;  // [groups, tokens, group_cols], or undefined
  int64_t groups = 0, group_cols = 0;

  GroupInputs(const at::Tensor& x, int64_t cols_per_group)
      : groups(x.size(1) / cols_per_group), group_cols(cols_per_group) {
    const int64_t tokens = x.size(0);
    const at::Tensor grouped = x.reshape({tokens, groups, group_cols}).permute({1, 0, 2});
    if (group_cols < tokens)
      gram = at::bmm(grouped.transpose(1, 2), grouped) / double(tokens);
    else
      x_groups = grouped.contiguous();
  }

  // delta [groups, rows, group_cols] -> mean over tokens of each (group, row)'s output change
  // squared, [groups, rows].
  at::Tensor mean_squared_change(const at::Tensor& delta) const {
    if (gram.defined()) return (at::bmm(delta, gram) * delta).sum(-1);
    return at::bmm(x_groups, delta.transpose(1, 2)).pow(2).mean(1);
  }
};

// Clip search on one chunk of rows; returns [rows, groups]. Error of (row, group) for a clip:
// mean over tokens of that group's output change, d = quantized - w.
at::Tensor search_clip_rows(const at::Tensor& w, const GroupInputs& inputs, const UniformQuant& q,
                            const ClipSearchOptions& o) {
  const int64_t rows = w.size(0), groups = inputs.groups, group_cols = inputs.group_cols;
  const at::Tensor full_range = w.reshape({rows, groups, group_cols}).abs().amax(-1);
  at::Tensor best_max = full_range;
  at::Tensor best_err = at::full_like(full_range, std::numeric_limits<double>::infinity());
  for (int i = 0; i < o.n_grid; ++i) {
    const at::Tensor clip_max = full_range * (1.0 - o.max_shrink * i / o.n_grid);
    const at::Tensor delta =
        (fake_quantize_clipped(w, q, clip_max) - w).reshape({rows, groups, group_cols}).transpose(0, 1);  // [g, r, gc]
    const at::Tensor err = inputs.mean_squared_change(delta).t();  // [rows, groups]
    const at::Tensor better = err < best_err;  // strict: ties keep the weaker clip
    best_err = at::where(better, err, best_err);
    best_max = at::where(better, clip_max, best_max);
  }
  return best_max;
}

}  // namespace

BlockForward concatenated_linear_outputs(at::Tensor x) {
  return [x = x.to(at::kFloat)](const std::vector<at::Tensor>& weights) {
    std::vector<at::Tensor> outputs;
    outputs.reserve(weights.size());
    for (const at::Tensor& w : weights) outputs.push_back(at::matmul(x, w.to(at::kFloat).t()));
    return at::cat(outputs, -1);
  };
}

at::Tensor mean_abs_per_channel(const at::Tensor& x) { return x.to(at::kFloat).abs().mean(0); }

at::Tensor awq_scales(const at::Tensor& channel_magnitude, double alpha) {
  const at::Tensor s = at::pow(channel_magnitude.to(at::kFloat), alpha).clamp_min(kMinScale);
  return s / (s.max() * s.min()).sqrt();
}

ScaleSearchResult awq_search_scales(const at::Tensor& x, const std::vector<at::Tensor>& weights,
                                    const UniformQuant& q, const BlockForward& block,
                                    const ScaleSearchOptions& options) {
  return awq_search_scales(x, weights, std::vector<std::optional<UniformQuant>>(weights.size(), q), block, options);
}

ScaleSearchResult awq_search_scales(const at::Tensor& x, const std::vector<at::Tensor>& weights,
                                    const std::vector<std::optional<UniformQuant>>& quants, const BlockForward& block,
                                    const ScaleSearchOptions& options) {
  check_input("awq scale search", x, weights);
  if (quants.size() != weights.size()) throw Error("awq scale search", "one quant type per weight is needed");
  if (options.n_grid < 1) throw Error("awq scale search", "n_grid must be positive");
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> originals;
  for (const at::Tensor& w : weights) originals.push_back(w.to(at::kFloat));
  const at::Tensor reference = block(originals);
  const at::Tensor magnitude = mean_abs_per_channel(x);

  ScaleSearchResult result;
  double best_loss = std::numeric_limits<double>::infinity();
  for (int i = 0; i < options.n_grid; ++i) {
    const double alpha = double(i) / options.n_grid;
    const at::Tensor s = awq_scales(magnitude, alpha);
    std::vector<at::Tensor> candidates;
    for (size_t j = 0; j < originals.size(); ++j)
      candidates.push_back(quants[j] ? fake_quantize(originals[j] * s, *quants[j]) / s : originals[j]);
    const double loss = mse(block(candidates), reference);
    if (std::isnan(loss))
      throw Error("awq scale search", "block output is NaN at alpha " + std::to_string(alpha));
    result.table.push_back({alpha, loss});
    if (loss < best_loss || result.table.size() == 1) {  // strict: ties keep the smaller alpha
      best_loss = loss;
      result.best_alpha = alpha;
      result.scales = s;
    }
  }
  return result;
}

at::Tensor awq_search_clip(const at::Tensor& w, const at::Tensor& x, const UniformQuant& q,
                           const ClipSearchOptions& options) {
  check_input("awq clip search", x, {w});
  if (options.n_grid < 1 || options.max_tokens < 1 || options.rows_per_chunk < 1 ||
      !(options.max_shrink >= 0 && options.max_shrink < 1))
    throw Error("awq clip search", "invalid options (n_grid, max_tokens, rows_per_chunk >= 1; 0 <= max_shrink < 1)");
  at::NoGradGuard no_grad;
  const at::Tensor weights = w.to(at::kFloat);
  const int64_t cols = weights.size(1);
  const int64_t group_cols = q.group_cols(cols);
  if (group_cols <= 0 || cols % group_cols != 0)
    throw Error("awq clip search", "columns are not a multiple of the group size",
                "a multiple of " + std::to_string(group_cols), std::to_string(cols));
  const GroupInputs inputs(subsample_tokens(x, options.max_tokens).to(at::kFloat), group_cols);

  std::vector<at::Tensor> chunks;
  for (int64_t row = 0; row < weights.size(0); row += options.rows_per_chunk) {
    const int64_t n = std::min(options.rows_per_chunk, weights.size(0) - row);
    chunks.push_back(search_clip_rows(weights.narrow(0, row, n), inputs, q, options));
  }
  return at::cat(chunks, 0);
}

AwqGroupResult awq_search_group(const at::Tensor& x, const std::vector<at::Tensor>& weights,
                                const UniformQuant& q, const BlockForward& block, const AwqOptions& options) {
  AwqGroupResult result;
  result.scale = awq_search_scales(x, weights, q, block, options.scale);
  const at::Tensor& s = result.scale.scales;
  // The scaled linears see x / s; subsampling first keeps the copy small.
  const at::Tensor x_scaled = subsample_tokens(x, options.clip.max_tokens).to(at::kFloat) / s;
  for (const at::Tensor& w : weights) {
    at::Tensor scaled = scale_input_columns(w, s);
    if (options.search_clip) {
      result.clip_max.push_back(awq_search_clip(scaled, x_scaled, q, options.clip));
      scaled = clip_groups(scaled, result.clip_max.back(), q);
    }
    result.to_quantize.push_back(scaled);
  }
  return result;
}

}  // namespace fsq
