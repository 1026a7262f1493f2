// QSpec (issue 59): the draft is the verifier itself with its packed linears run on 4-bit
// per-token activations (runtime/activation_mode.h, cpu/w4a4_kernels.h): the same weights,
// the same KV cache. Each proposal runs up to max_tokens single-token steps from the pending
// token at the verifier's cache end, writing draft K/V at positions >= cache->length (the
// verify pass overwrites all of them before reading them) and putting cache->length back.
// Acceptance is then the verifier's (greedy: the output equals plain greedy decoding).
//
// Which linears draft on 4-bit activations: those that read the residual stream through a
// norm (the architecture table's groups with a norm: q/k/v, gate/up), whose input the
// rotation (fsq convert --rotate, before quantizing) spreads. o_proj and down_proj read the
// attention output and the SwiGLU product, which that offline rotation does not touch
// (QuaRot rotates them online, not built here), and the head: these run as set (the
// verifier's activations) in the draft too. On SmolLM2 rotated W4 g32 (one prompt, 32
// tokens, gamma 4) 4-bit inputs for every linear accepted 18 % of the drafts, for these 38 %.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/speculative/proposer.h"

namespace fsq::speculative {

// Marks the linears that take 4-bit activations in draft mode (PackedKernelLinear::
// set_draft_int4; see above) and returns how many it marked (0: no packed linears, the draft
// then equals the verifier).
int64_t mark_qspec_draft_linears(const LlamaModel& model);

class QSpecProposer : public Proposer {
 public:
  std::string describe() const override { return "qspec (W4A4 draft on the verifier's weights and KV cache)"; }
  void begin(const VerifierState& state) override;
  void propose(const VerifierState& state, int64_t max_tokens, std::vector<int32_t>& draft) override;
  void accepted(const VerifierState&, int64_t, int32_t) override {}  // the cache is the verifier's

  // Draft steps (single tokens) run so far, and their wall time, for reports.
  int64_t draft_steps() const { return steps_; }
  double draft_seconds() const { return seconds_; }

 private:
  std::vector<float> logits_;
  int64_t steps_ = 0;
  double seconds_ = 0.0;
};

}  // namespace fsq::speculative
