#include "quantize/squeezellm_layer.h"

#include <ATen/ATen.h>

#include "common/error.h"
#include "formats/architectures.h"
#include "formats/checkpoint.h"
#include "formats/quant/lut_quant.h"
#include "quantize/gptq.h"
#include "quantize/gptq_lut.h"
#include "quantize/layer_values.h"
#include "runtime/model.h"

namespace fsq {

CalibrationFile open_fisher_calibration(const std::filesystem::path& path, const Checkpoint& ckpt) {
  CalibrationFile calib =
      CalibrationFile::open_for_model(path, ckpt.weights_sha256(), "run fsq calibrate --fisher on this model");
  if (!calib.has_fisher())
    throw Error(path.string(), "holds no Fisher diagonals; make it with fsq calibrate --fisher");
  return calib;
}

StoredLayer quantize_layer_lut(const DecoderLayer& layer, const ArchSpec& arch, int64_t index,
                               const CalibrationFile* calib, const squeezellm::LutOptions& options,
                               const LayerActivations* gptq_inputs, const std::map<std::string, int>* widths) {
  StoredLayer stored;
  stored.report = nlohmann::json::object();
  // GPTQ's Hessian per role: one per group, shared by the linears reading the same input.
  std::map<std::string, at::Tensor> hessians;
  if (gptq_inputs) {
    for (const LinearGroup& group : arch.groups) {
      bool has_lut_role = widths == nullptr;
      for (const auto& role : group.roles)
        has_lut_role = has_lut_role || (widths->count(role) && lut_bits_supported(widths->at(role)));
      if (!has_lut_role) continue;
      const auto x = gptq_inputs->groups.find(group.name);
      if (x == gptq_inputs->groups.end()) throw Error("squeezellm", "GPTQ has no calibration inputs for " + group.name);
      const at::Tensor h = gptq_hessian(x->second);
      for (const auto& role : group.roles) hessians[role] = h;
    }
  }
  for (const auto& spec : arch.linears) {
    squeezellm::LutOptions linear_options = options;
    if (widths) {
      const auto it = widths->find(spec.role);
      if (it == widths->end() || !lut_bits_supported(it->second)) continue;
      linear_options.bits = it->second;
    }
    const DenseLinear& d = dense_linear(layer, spec.role, "squeezellm");
    const std::string name = layer_name(spec.pattern, index);
    const int64_t rows = d.out_features(), cols = d.in_features();
    const std::vector<float> w = to_floats(d.weight());
    const float* fisher = nullptr;
    if (calib) {
      const TensorView* f = calib->fisher(name);
      if (!f) throw Error(calib->path().string(), "has no Fisher diagonal for " + name);
      if (f->shape != std::vector<int64_t>{rows, cols})
        throw Error(calib->path().string(), name + kFisher + " has the wrong shape",
                    "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]", shape_text(f->shape));
      fisher = float_span(*f).data();
    }
    squeezellm::LutStats stats;
    LutMatrix m = squeezellm::quantize_lut(w.data(), fisher, rows, cols, linear_options, &stats, name);
    stored.report[spec.role] = {{"sparse", stats.nnz},
                                {"weighted_error", stats.weighted_error},
                                {"squared_error", stats.squared_error},
                                {"rows_at_iteration_cap", stats.rows_hit_iteration_cap}};
    if (gptq_inputs) {
      const LutGptqStats g = gptq_assign_lut(m, w.data(), hessians.at(spec.role), name);
      stored.report[spec.role]["gptq_loss_vs_nearest"] = g.loss_nearest > 0 ? g.loss_gptq / g.loss_nearest : 1.0;
    }
    stored.lut_linears.emplace(spec.role, std::move(m));
    if (d.bias()) stored.vectors[spec.role + ".bias"] = to_floats(*d.bias());
  }
  stored.vectors["input_norm"] = to_floats(layer.input_norm);
  stored.vectors["post_attn_norm"] = to_floats(layer.post_attn_norm);
  return stored;
}

}  // namespace fsq
