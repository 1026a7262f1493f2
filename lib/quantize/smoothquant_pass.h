// The SmoothQuant pass over one decoder layer (smoothquant.h has the math). Per linear
// group of the ArchSpec: smoothing factors from the calibration inputs' per-channel absmax
// and the group's weights, at the given alpha or, with alpha unset, the alpha of
// smoothquant_alpha_grid() whose W8A8 output error on the calibration tokens is smallest;
// folded into the preceding RMSNorm or producing linear. Under grouped-query attention
// o_proj's scales come from absmaxes pooled over the query heads that share a KV head and
// divide out of v_proj's rows (group_fold.h; the report marks it "shared_kv_heads"). A group
// with no fold stays unsmoothed and the report says why. It also records each
// linear's largest |input| after smoothing, for static per-tensor activation scales. With
// gptq it also hands out each group's GPTQ Hessian of its smoothed calibration inputs
// (PassResult::gptq_hessians), for the rounding stage that runs after all of the layer's
// folds (a later group's fold rescales an earlier group's producer rows: v_proj, up_proj).
#pragma once

#include <optional>

#include "quantize/pass.h"

namespace fsq {

class SmoothQuantPass final : public QuantPass {
 public:
  // smooth = false: naive W8A8, every group unsmoothed (the baseline SmoothQuant is
  // measured against).
  SmoothQuantPass(std::optional<double> alpha, ActivationQuant act_quant, bool smooth = true, bool gptq = false)
      : alpha_(alpha), act_quant_(act_quant), smooth_(smooth), gptq_(gptq) {}
  PassResult run(DecoderLayer& layer, const LayerActivations& acts, const PassContext& ctx) const override;

 private:
  std::optional<double> alpha_;
  ActivationQuant act_quant_;
  bool smooth_ = true;
  bool gptq_ = false;
};

}  // namespace fsq
