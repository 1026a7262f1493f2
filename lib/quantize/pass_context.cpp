#include "common/error.h"
#include "formats/quant/quant_types.h"
#include "quantize/awq_pass.h"
#include "quantize/pass.h"
#include "quantize/smoothquant_pass.h"

namespace fsq {
namespace {

// Round-to-nearest: the data-free baseline. The pipeline quantizes the weights as they are.
// Also the (empty) pass of SqueezeLLM, whose work is in the pipeline's LUT quantization.
class RtnPass final : public QuantPass {
 public:
  PassResult run(DecoderLayer&, const LayerActivations&, const PassContext&) const override { return {}; }
};

}  // namespace

UniformQuant PassContext::quant_for(int64_t cols) const { return quant_for_columns(quant, cols); }

int PassContext::bits_for(const std::string& role) const {
  const auto it = role_bits.find(role);
  return it == role_bits.end() ? quant.bits : it->second;
}

UniformQuant PassContext::quant_for(const std::string& role, int64_t cols) const {
  const int bits = bits_for(role);
  if (bits == 0) throw Error(role, "is not rounded to a uniform type in this layer (internal error)");
  UniformQuant q = quant;
  q.bits = bits;
  return quant_for_columns(q, cols);
}

bool PassContext::rounds(const std::string& role) const { return bits_for(role) != 0; }

const std::vector<PassInfo>& quant_passes() {
  static const std::vector<PassInfo> passes = {
      {"rtn", "round-to-nearest group quantization (data-free baseline)", false,
       [](const PassOptions&) { return std::make_unique<RtnPass>(); }, false},
      {"awq", "activation-aware scale search per linear group, scale folding, clip search (Lin et al. 2023)", true,
       [](const PassOptions&) { return std::make_unique<AwqPass>(); }, false},
      {"squeezellm",
       "Fisher-weighted per-row k-means lookup tables (3/4 bits) with dense-and-sparse outliers (Kim et al. 2023)",
       false, [](const PassOptions&) { return std::make_unique<RtnPass>(); }, true},
      {"smoothquant",
       "W8A8: activation outliers smoothed into the weights (alpha), int8 weights per channel and int8 "
       "activations per token or per tensor (Xiao et al. 2023)",
       true, [](const PassOptions& o) { return std::make_unique<SmoothQuantPass>(o.smooth_alpha, o.act_quant, true, o.gptq); },
       false, true},
      {"w8a8", "naive W8A8 (no smoothing): int8 weights per channel, int8 activations per token or per tensor",
       true,
       [](const PassOptions& o) { return std::make_unique<SmoothQuantPass>(std::nullopt, o.act_quant, false, o.gptq); },
       false, true},
      {"intonly",
       "integer-only inference (I-BERT): SmoothQuant (alpha) with static per-tensor int8 activations, plus the "
       "calibrated ranges of every activation the integer decoder layer requantizes to",
       true,
       [](const PassOptions& o) {
         return std::make_unique<SmoothQuantPass>(o.smooth_alpha, ActivationQuant::PerTensor, true, o.gptq);
       },
       false, true, true},
  };
  return passes;
}

const PassInfo& find_quant_pass(const std::string& name) {
  std::string names;
  for (const auto& p : quant_passes()) {
    if (p.name == name) return p;
    names += (names.empty() ? "" : ", ") + p.name;
  }
  throw Error("--method", "unknown quantization method " + quote_name(name) + "; available: " + names);
}

}  // namespace fsq
