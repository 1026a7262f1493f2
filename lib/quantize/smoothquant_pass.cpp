#include "quantize/smoothquant_pass.h"

#include <ATen/ATen.h>

#include <limits>
#include <map>
#include <vector>

#include "calib/calib_file.h"
#include "common/error.h"
#include "formats/architectures.h"
#include "quantize/gptq.h"
#include "quantize/group_fold.h"
#include "quantize/layer_values.h"
#include "quantize/smoothquant.h"
#include "runtime/model.h"

namespace fsq {
namespace {

constexpr const char* kSmoothQuantWho = "smoothquant";

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

// How a group's scales fold: "" plain (norm or one-to-one producer), "shared kv" (o_proj
// under grouped-query attention: scales shared by the query heads of a KV head, divided out
// of v_proj's rows), or why not at all.
struct FoldRoute {
  bool shared_kv = false;
  std::string blocker;
};

FoldRoute fold_route(const DecoderLayer& layer, const LinearGroup& group, int64_t width, bool smooth) {
  if (!smooth) return {false, "naive W8A8: no smoothing"};
  std::string blocker = group_fold_blocker(layer, group, width, kSmoothQuantWho);
  if (!blocker.empty() && folds_through_shared_kv_heads(layer, group, width, kSmoothQuantWho)) return {true, ""};
  return {false, blocker};
}

// Scales for the route: with shared KV heads, from absmaxes pooled over the query heads of
// each KV head, so they are equal where the fold needs them equal.
at::Tensor route_scales(const FoldRoute& route, const at::Tensor& x_absmax, const at::Tensor& w_absmax, double alpha,
                        int64_t kv_rows, int64_t head_dim) {
  if (!route.shared_kv) return smoothing_scales(x_absmax, w_absmax, alpha);
  return smoothing_scales(max_over_shared_kv_heads(x_absmax, kv_rows, head_dim),
                          max_over_shared_kv_heads(w_absmax, kv_rows, head_dim), alpha);
}

void fold_route_scales(DecoderLayer& layer, const PassContext& ctx, const LinearGroup& group, const FoldRoute& route,
                       const at::Tensor& s) {
  if (route.shared_kv)
    fold_group_scales_shared_kv(layer, group, s, ctx.config.head_dim, kSmoothQuantWho);
  else
    fold_group_scales(layer, ctx.arch, group, s, kSmoothQuantWho);
}

int64_t producer_rows(const DecoderLayer& layer, const LinearGroup& group) {
  return group.producer.empty() ? 0 : dense_linear(layer, group.producer, kSmoothQuantWho).weight().size(0);
}

// Without calibration activations: smoothing from the calibration file's per-channel input
// absmax (fixed alpha only; the pipeline refuses auto), and the static scale's range as
// max_j absmax_j / s_j, the largest |x / s| those statistics allow.
PassResult smooth_from_file(DecoderLayer& layer, const PassContext& ctx, std::optional<double> alpha, bool smooth) {
  if (!ctx.activation_stats) throw Error(kSmoothQuantWho, "needs calibration activations or a calibration file");
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
    for (const auto& role : group.roles) weights.push_back(dense_linear(layer, role, kSmoothQuantWho).weight().to(at::kFloat));
    if (x_absmax.size(0) != weights.front().size(1))
      throw Error(ctx.activation_stats->path().string(), first + kInputAbsmax + " does not match the linear's inputs");
    nlohmann::json entry = {{"stats", "calibration file"}};
    at::Tensor s = at::ones_like(x_absmax);
    const FoldRoute route = fold_route(layer, group, x_absmax.size(0), smooth);
    if (route.blocker.empty()) {
      if (!alpha) throw Error("--alpha", "auto needs calibration activations");
      s = route_scales(route, x_absmax, weight_column_absmax(weights), *alpha, producer_rows(layer, group),
                       ctx.config.head_dim);
      fold_route_scales(layer, ctx, group, route, s);
      entry.update({{"smoothed", true}, {"alpha", *alpha}, {"searched", false}, {"shared_kv_heads", route.shared_kv}});
    } else {
      entry.update({{"smoothed", false}, {"reason", route.blocker}});
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
  if (acts.groups.empty()) {
    if (gptq_) throw Error(kSmoothQuantWho, "GPTQ needs calibration inputs, not only a calibration file's statistics");
    return smooth_from_file(layer, ctx, alpha_, smooth_);
  }
  PassResult result;
  for (const LinearGroup& group : ctx.arch.groups) {
    const at::Tensor x = acts.groups.at(group.name);
    const at::Tensor x2 = x.reshape({-1, x.size(-1)}).to(at::kFloat);
    std::vector<at::Tensor> weights;
    for (const auto& role : group.roles) weights.push_back(dense_linear(layer, role, kSmoothQuantWho).weight().to(at::kFloat));
    const at::Tensor x_absmax = std::get<0>(x2.abs().max(0));
    const at::Tensor sample = spread_tokens(x2, ctx.search_tokens);
    const at::Tensor ones = at::ones({x2.size(1)}, at::kFloat);
    const double unsmoothed = w8a8_output_error(sample, weights, ones, act_quant_);

    nlohmann::json entry = {{"error_unsmoothed", unsmoothed}};
    at::Tensor s = ones;
    const FoldRoute route = fold_route(layer, group, x2.size(1), smooth_);
    if (route.blocker.empty()) {
      const at::Tensor w_absmax = weight_column_absmax(weights);
      const int64_t kv_rows = producer_rows(layer, group), head_dim = ctx.config.head_dim;
      auto scales = [&](double alpha) { return route_scales(route, x_absmax, w_absmax, alpha, kv_rows, head_dim); };
      Choice choice{alpha_.value_or(0), std::numeric_limits<double>::infinity()};
      for (double alpha : alpha_ ? std::vector<double>{*alpha_} : smoothquant_alpha_grid()) {
        const double err = w8a8_output_error(sample, weights, scales(alpha), act_quant_);
        if (err < choice.error) choice = {alpha, err};  // ties keep the smaller alpha: deterministic
      }
      s = scales(choice.alpha);
      fold_route_scales(layer, ctx, group, route, s);
      entry.update({{"smoothed", true}, {"alpha", choice.alpha}, {"searched", !alpha_.has_value()},
                    {"error", choice.error}, {"shared_kv_heads", route.shared_kv}});
    } else {
      entry.update({{"smoothed", false}, {"reason", route.blocker}});
    }
    const at::Tensor smoothed = x2 / s;
    const float absmax = smoothed.abs().max().item<float>();
    for (const auto& role : group.roles) result.input_absmax[role] = absmax;
    entry["input_absmax"] = absmax;
    result.report[group.name] = entry;
    if (gptq_) result.gptq_hessians[group.name] = gptq_hessian(smoothed);
  }
  return result;
}

}  // namespace fsq
