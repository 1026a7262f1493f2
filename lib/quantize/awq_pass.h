// The AWQ pass over one decoder layer, with the groups AutoAWQ uses for LLaMA-family
// blocks, taken from the ArchSpec groups: q/k/v after the input RMSNorm (block output: the
// whole attention), o_proj after v_proj (only when v's outputs are o's inputs one to one, i.e.
// no grouped-query sharing), gate/up after the post-attention RMSNorm (block output: the MLP),
// down_proj after up_proj. All scales are searched on the fp layer and folded, then the clip
// search runs on every linear except the rotary_output ones, q/k (their error shows in
// attention scores, which output MSE of a linear does not see).
#pragma once

#include "quantize/awq_search.h"
#include "quantize/pass.h"

namespace fsq {

class AwqPass final : public QuantPass {
 public:
  explicit AwqPass(AwqOptions options = {}) : options_(options) {}
  PassResult run(DecoderLayer& layer, const LayerActivations& acts, const PassContext& ctx) const override;

 private:
  AwqOptions options_;
};

}  // namespace fsq
