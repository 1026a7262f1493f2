#include "quantize/variance_indicator.h"

#include <ATen/ATen.h>

#include <cmath>

#include "calib/calib_file.h"
#include "common/error.h"
#include "formats/architectures.h"
#include "formats/checkpoint.h"
#include "formats/quant/quant_types.h"
#include "quantize/layer_values.h"
#include "runtime/model.h"

namespace fsq {

namespace {

// sum over rows and groups of range(row, group)^2 * sum of Var[X_j] over the group's columns.
double range_variance_sum(const at::Tensor& w, const at::Tensor& var, int64_t group) {
  const int64_t rows = w.size(0), cols = w.size(1);
  const int64_t g = group > 0 ? group : cols;
  at::Tensor grouped = w.view({rows, cols / g, g});
  at::Tensor range = std::get<0>(grouped.max(2)) - std::get<0>(grouped.min(2));  // [rows, groups]
  at::Tensor range_sq = (range * range).sum(0);                                    // [groups]
  at::Tensor var_sum = var.view({cols / g, g}).sum(1);                             // [groups]
  return (range_sq * var_sum).sum().item<double>();
}

}  // namespace

std::vector<LayerIndicator> variance_indicator(const Checkpoint& ckpt, const CalibrationFile& calib,
                                               const std::vector<int>& widths, int64_t group_size) {
  at::NoGradGuard no_grad;
  const ModelConfig& mc = ckpt.config();
  const ArchSpec& arch = arch_spec_for(mc.architecture);
  RuntimeOptions opts;
  auto shell = LlamaModel::load(ckpt, opts, /*with_layers=*/false);
  std::vector<LayerIndicator> out(mc.num_layers);
  for (int64_t i = 0; i < mc.num_layers; ++i) {
    DecoderLayer layer = shell->load_layer(ckpt, i);
    out[i].omega.assign(widths.size(), 0.0);
    for (const auto& spec : arch.linears) {
      const std::string name = layer_name(spec.pattern, i);
      const DenseLinear& d = dense_linear(layer, spec.role, "variance indicator");
      auto stats = calib.input_stats(name);
      if (!stats) throw Error(calib.path().string(), "has no input statistics for " + name + "; rerun fsq calibrate");
      const int64_t cols = d.in_features();
      if (static_cast<int64_t>(stats->mean.size()) != cols)
        throw Error(calib.path().string(), name + " statistics have " + std::to_string(stats->mean.size()) +
                                               " channels, the weight has " + std::to_string(cols));
      at::Tensor mean = at::from_blob(const_cast<float*>(stats->mean.data()), {cols}, at::kFloat).to(at::kDouble);
      at::Tensor sqmean = at::from_blob(const_cast<float*>(stats->sqmean.data()), {cols}, at::kFloat).to(at::kDouble);
      at::Tensor var = (sqmean - mean * mean).clamp_min(0);
      at::Tensor w = d.weight().to(at::kDouble);
      LinearIndicator linear{spec.role, std::vector<double>(widths.size(), 0.0), static_cast<double>(w.numel())};
      for (size_t k = 0; k < widths.size(); ++k) {
        if (widths[k] >= 16) continue;
        const UniformQuant q = quant_for_columns(UniformQuant{widths[k], group_size, false}, cols);
        const double levels = std::ldexp(1.0, widths[k]) - 1;
        linear.omega[k] = range_variance_sum(w, var, q.group_size) / (levels * levels) / 4;
        out[i].omega[k] += linear.omega[k];
      }
      out[i].params += linear.params;
      out[i].linears.push_back(std::move(linear));
    }
  }
  return out;
}

}  // namespace fsq
