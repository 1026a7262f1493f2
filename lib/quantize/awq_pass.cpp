#include "quantize/awq_pass.h"

#include <ATen/ATen.h>

#include "common/error.h"
#include "quantize/group_fold.h"
#include "quantize/layer_values.h"
#include "quantize/fake_quant.h"
#include "runtime/model.h"

namespace fsq {
namespace {

const DenseLinear& awq_dense(const DecoderLayer& layer, const std::string& role) { return dense_linear(layer, role, "awq"); }

at::Tensor flat(const at::Tensor& x) { return x.reshape({-1, x.size(-1)}); }

// What the block forwards of the scale search see (mean |x| still uses every token), x:
// [N, T, C]. Attention needs whole windows (evenly spaced ones); other blocks act per token
// (every k-th token). Bounds the 20 block forwards per group on large calibration sets.
at::Tensor search_subset(const at::Tensor& x, bool whole_windows, int64_t max_tokens) {
  const int64_t windows = x.size(0), tokens = x.size(1);
  if (max_tokens <= 0 || windows * tokens <= max_tokens) return x;
  if (whole_windows) {
    const int64_t keep = std::max<int64_t>(1, max_tokens / tokens);
    return x.index_select(0, at::linspace(0, windows - 1, keep, at::kDouble).round().to(at::kLong).to(x.device()));
  }
  const at::Tensor all = flat(x);
  const int64_t step = (all.size(0) + max_tokens - 1) / max_tokens;
  return all.slice(0, 0, all.size(0), step).unsqueeze(0);
}

// The group's block output for candidate weights, `batch` windows at a time.
BlockForward block_forward(const DecoderLayer& layer, const LinearGroup& group, const at::Tensor& x,
                           const PassContext& ctx) {
  if (group.block == BlockKind::kLinear) return concatenated_linear_outputs(flat(x));
  const bool attention = group.block == BlockKind::kAttention;
  return [&layer, &group, x, &ctx, attention](const std::vector<at::Tensor>& weights) {
    DecoderLayer candidate;
    for (const auto& spec : ctx.arch.linears) {
      const DenseLinear& d = awq_dense(layer, spec.role);
      candidate.linear(spec.role) = std::make_unique<DenseLinear>(d.weight(), d.bias());
    }
    for (size_t j = 0; j < group.roles.size(); ++j)
      set_dense_linear(candidate, group.roles[j], weights[j], awq_dense(layer, group.roles[j]).bias());
    std::vector<at::Tensor> parts;
    for (int64_t b = 0; b < x.size(0); b += ctx.block_batch) {
      at::Tensor xb = x.narrow(0, b, std::min(ctx.block_batch, x.size(0) - b));
      parts.push_back(attention ? candidate.attention(xb, ctx.rope, ctx.config, 0, nullptr, ctx.layer)
                                : candidate.mlp(xb));
    }
    return at::cat(parts, 0);
  };
}

}  // namespace

PassResult AwqPass::run(DecoderLayer& layer, const LayerActivations& acts, const PassContext& ctx) const {
  at::NoGradGuard no_grad;
  PassResult result;
  nlohmann::json& report = result.report;
  std::map<std::string, at::Tensor> scaled_inputs;  // group -> [tokens, in] after folding

  // 1. Scale search per group on the fp layer, then fold (the fp function is unchanged).
  for (const LinearGroup& group : ctx.arch.groups) {
    const at::Tensor& x = acts.groups.at(group.name);
    at::Tensor x2 = flat(x);
    const std::string blocker = group_fold_blocker(layer, group, x.size(-1), "awq");
    if (!blocker.empty()) {
      scaled_inputs[group.name] = x2;
      report[group.name] = {{"scaled", false}, {"reason", blocker}};
      continue;
    }
    std::vector<at::Tensor> weights;
    std::vector<std::optional<UniformQuant>> quants;  // per linear: a plan may give them different widths
    for (const auto& role : group.roles) {
      weights.push_back(awq_dense(layer, role).weight().to(at::kFloat));
      quants.push_back(ctx.rounds(role) ? std::optional(ctx.quant_for(role, x.size(-1))) : std::nullopt);
    }
    const at::Tensor xs = search_subset(x, group.block == BlockKind::kAttention, ctx.search_tokens);
    ScaleSearchResult found =
        awq_search_scales(x2, weights, quants, block_forward(layer, group, xs, ctx), options_.scale);
    const at::Tensor& s = found.scales;
    fold_group_scales(layer, ctx.arch, group, s, "awq");
    scaled_inputs[group.name] = x2 / s;
    double best_loss = found.table.front().loss;
    for (const AlphaLoss& entry : found.table)
      if (entry.alpha == found.best_alpha) best_loss = entry.loss;
    report[group.name] = {{"scaled", true},
                          {"alpha", found.best_alpha},
                          {"loss", best_loss},
                          {"loss_alpha0", found.table.front().loss}};
  }

  // 2. Clip search on the folded weights with the correspondingly scaled inputs.
  if (options_.search_clip) {
    for (const LinearGroup& group : ctx.arch.groups) {
      for (const auto& role : group.roles) {
        if (ctx.arch.linear(role).rotary_output || !ctx.rounds(role)) continue;  // see awq_pass.h; 16-bit: no clip
        const DenseLinear& d = awq_dense(layer, role);
        at::Tensor w = d.weight().to(at::kFloat);
        const UniformQuant q = ctx.quant_for(role, w.size(1));
        at::Tensor clip = awq_search_clip(w, scaled_inputs.at(group.name), q, options_.clip);
        set_dense_linear(layer, role, clip_groups(w, clip, q), d.bias());
      }
    }
  }
  return result;
}

}  // namespace fsq
