#include "quantize/smoothquant_pass.h"

#include <ATen/ATen.h>

#include <limits>

#include "calib/calib_file.h"
#include "common/error.h"
#include "formats/architectures.h"
#include "quantize/group_fold.h"
#include "quantize/layer_values.h"
#include "quantize/smoothquant.h"
#include "runtime/model.h"

namespace fsq {
namespace {

constexpr const char* kWho = "smoothquant";

// Evenly spread tokens of x [tokens, in] for the alpha search (all when max_tokens <= 0).
at::Tensor spread_tokens(const at::Tensor& x, int64_t max_tokens) {
  if (max_tokens <= 0 || x.size(0) <= max_tokens) return x;
  const int64_t step = (x.size(0) + max_tokens - 1) / max_tokens;
  return x.slice(0, 0, x.size(0), step);
}

struct Choice {
  double alpha = 0;
  double error = 0;
};

Choice search_alpha(const at::Tensor& x, const std::vector<at::Tensor>& weights, const at::Tensor& x_absmax,
                    const at::Tensor& w_absmax, ActivationQuant mode) {
  Choice best{0, std::numeric_limits<double>::infinity()};
  for (double alpha : smoothquant_alpha_grid()) {
    const double err = w8a8_output_error(x, weights, smoothing_scales(x_absmax, w_absmax, alpha), mode);
    if (err < best.error) best = {alpha, err};  // ties keep the smaller alpha: deterministic
  }
  return best;
}

// Without calibration activations: smoothing from the calibration file's per-channel input
// absmax (fixed alpha only; the pipeline refuses auto), and the static scale's range as
// max_j absmax_j / s_j, the largest |x / s| those statistics allow.
PassResult smooth_from_file(DecoderLayer& layer, const PassContext& ctx, std::optional<double> alpha, bool smooth) {
  if (!ctx.activation_stats) throw Error(kWho, "needs calibration activations or a calibration file");
  PassResult result;
  for (const LinearGroup& group : ctx.arch.groups) {
    const std::string first = layer_name(ctx.arch.linear(group.roles.front()).pattern, ctx.layer);
    const auto stats = ctx.activation_stats->input_stats(first);
    if (!stats) throw Error(ctx.activation_stats->path().string(), "has no input statistics for " + first);
    const at::Tensor x_absmax =
        at::from_blob(const_cast<float*>(stats->absmax.data()), {static_cast<int64_t>(stats->absmax.size())},
                      at::kFloat)
            .clone();
    std::vector<at::Tensor> weights;
    for (const auto& role : group.roles) weights.push_back(dense_linear(layer, role, kWho).weight().to(at::kFloat));
    if (x_absmax.size(0) != weights.front().size(1))
      throw Error(ctx.activation_stats->path().string(), first + kInputAbsmax + " does not match the linear's inputs");
    nlohmann::json entry = {{"stats", "calibration file"}};
    at::Tensor s = at::ones_like(x_absmax);
    const std::string blocker =
        smooth ? group_fold_blocker(layer, group, x_absmax.size(0), kWho) : std::string("naive W8A8: no smoothing");
    if (blocker.empty()) {
      if (!alpha) throw Error("--alpha", "auto needs calibration activations");
      s = smoothing_scales(x_absmax, weight_column_absmax(weights), *alpha);
      fold_group_scales(layer, ctx.arch, group, s, kWho);
      entry.update({{"smoothed", true}, {"alpha", *alpha}, {"searched", false}});
    } else {
      entry.update({{"smoothed", false}, {"reason", blocker}});
    }
    const float absmax = (x_absmax / s).max().item<float>();
    for (const auto& role : group.roles) result.input_absmax[role] = absmax;
    entry["input_absmax"] = absmax;
    result.report[group.name] = entry;
  }
  return result;
}

}  // namespace

PassResult SmoothQuantPass::run(DecoderLayer& layer, const LayerActivations& acts, const PassContext& ctx) const {
  at::NoGradGuard no_grad;
  if (acts.groups.empty()) return smooth_from_file(layer, ctx, alpha_, smooth_);
  PassResult result;
  for (const LinearGroup& group : ctx.arch.groups) {
    const at::Tensor x = acts.groups.at(group.name);
    const at::Tensor x2 = x.reshape({-1, x.size(-1)}).to(at::kFloat);
    std::vector<at::Tensor> weights;
    for (const auto& role : group.roles) weights.push_back(dense_linear(layer, role, kWho).weight().to(at::kFloat));
    const at::Tensor x_absmax = std::get<0>(x2.abs().max(0));
    const at::Tensor sample = spread_tokens(x2, ctx.search_tokens);
    const at::Tensor ones = at::ones({x2.size(1)}, at::kFloat);
    const double unsmoothed = w8a8_output_error(sample, weights, ones, act_quant_);

    nlohmann::json entry = {{"error_unsmoothed", unsmoothed}};
    at::Tensor s = ones;
    const std::string blocker =
        smooth_ ? group_fold_blocker(layer, group, x2.size(1), kWho) : std::string("naive W8A8: no smoothing");
    if (blocker.empty()) {
      const at::Tensor w_absmax = weight_column_absmax(weights);
      Choice choice;
      if (alpha_) {
        choice = {*alpha_, 0};
        choice.error = w8a8_output_error(sample, weights, smoothing_scales(x_absmax, w_absmax, *alpha_), act_quant_);
      } else {
        choice = search_alpha(sample, weights, x_absmax, w_absmax, act_quant_);
      }
      s = smoothing_scales(x_absmax, w_absmax, choice.alpha);
      fold_group_scales(layer, ctx.arch, group, s, kWho);
      entry.update({{"smoothed", true}, {"alpha", choice.alpha}, {"searched", !alpha_.has_value()},
                    {"error", choice.error}});
    } else {
      entry.update({{"smoothed", false}, {"reason", blocker}});
    }
    const float absmax = (x2 / s).abs().max().item<float>();
    for (const auto& role : group.roles) result.input_absmax[role] = absmax;
    entry["input_absmax"] = absmax;
    result.report[group.name] = entry;
  }
  return result;
}

}  // namespace fsq
