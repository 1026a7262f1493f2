// A Proposer (runtime/speculative/proposer.h) running a second model beside the verifier,
// with its own KV cache: draft mode (any fsq-loadable model with the verifier's vocabulary,
// as llama-speculative runs) and the Big Little Decoder (BiLD: the same model at a lower
// precision). The draft greedily proposes up to max_tokens; with alpha_fb > 0 (BiLD's
// fallback threshold) it stops as soon as its top probability falls below alpha_fb,
// leaving the next token to the verifier. Its cache is rolled back to the kept prefix after
// each verify pass; tokens it has not seen (the verifier's own, or its last accepted draft)
// go in at the start of the next proposal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "runtime/speculative/proposer.h"

namespace fsq::speculative {

struct DraftOptions {
  double alpha_fb = 0.0;  // BiLD's fallback threshold on the draft's top probability; 0: never
  std::string name = "draft";  // for describe(): "draft" or "bild"
};

class DraftModelProposer : public Proposer {
 public:
  // `draft` must share the verifier's vocabulary (same vocab_size and tokenizer; the caller
  // checks the tokenizer). capacity: the positions a generation needs (prompt + new tokens).
  DraftModelProposer(const LlamaModel& draft, int64_t capacity, DraftOptions opts = {});
  std::string describe() const override;
  void begin(const VerifierState& state) override;
  void propose(const VerifierState& state, int64_t max_tokens, std::vector<int32_t>& draft) override;
  void accepted(const VerifierState& state, int64_t accepted, int32_t next) override;

  // Draft steps run so far (single-token or catch-up passes), for reports.
  int64_t draft_passes() const { return passes_; }

 private:
  // Runs ids[0, count) at the cache's end; leaves the last position's logits in last_.
  void feed(const int64_t* ids, int64_t count);

  const LlamaModel& model_;
  int64_t capacity_;
  DraftOptions opts_;
  KVCache cache_;
  std::vector<float> rows_, last_;
  int64_t passes_ = 0;
};

}  // namespace fsq::speculative
