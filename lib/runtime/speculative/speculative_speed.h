// Decode speed of speculative decoding against plain greedy decoding of the same verifier
// on the same prompt (fsq eval --speed-only --speculate): the two alternate, after one
// warm-up each, and each reports its median decode tokens/s (from the first new token to
// the last: the prefill excluded, as fsq eval's decode speed).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/model.h"
#include "runtime/speculative/proposer.h"
#include "runtime/speculative/speculative_decode.h"

namespace fsq::speculative {

struct SpeculativeSpeed {
  int64_t prompt_tokens = 0, new_tokens = 0;
  int reps = 0;
  double plain_tokens_per_s = 0.0, tokens_per_s = 0.0;  // medians over the repetitions
  bool same_output = false;  // the speculative ids equal the plain greedy ids
  SpeculativeStats stats;    // of the last speculative repetition
};

// reps >= 1 timed runs of each. Throws as generate_speculative does.
SpeculativeSpeed measure_speculative_speed(const LlamaModel& verifier, Proposer& proposer,
                                           const std::vector<int32_t>& prompt, const SpeculativeOptions& opts,
                                           int reps);

}  // namespace fsq::speculative
