// Speculative decoding (issue 59): a Proposer (runtime/speculative/proposer.h) drafts a few
// tokens, the verifier (target model) runs the pending token and the drafts in one
// multi-position pass over its KV cache (LlamaModel::forward_positions), the longest
// accepted prefix is kept with the verifier's own next token, and the rejected positions
// are rolled back (cache.length set back; entries past it are overwritten later).
//
// With greedy acceptance (alpha_rb = 0) the output equals the verifier's plain greedy
// output (runtime/generate.h) token for token, by construction: the prompt is prefilled by
// the same call, and each verify row's logits are bit-identical to a single decode step's
// (FastDecoder::step_rows). Where the fast path is unavailable the verify pass runs on the
// ATen layers (another GEMM, so near-ties may break differently); stats.verify_path says so.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "runtime/speculative/proposer.h"

namespace fsq::speculative {

struct SpeculativeOptions {
  int64_t max_new_tokens = 32;
  int64_t stop_token = -1;  // stop after emitting this id (-1: never)
  int64_t gamma = 4;        // the most draft tokens per verify pass, 1..kMaxDraft
  // Acceptance of a draft token d at a verify row: d is the verifier's argmax there, or
  // (BiLD's rollback threshold, alpha_rb > 0) the verifier's -log p(d) <= alpha_rb. So 0
  // accepts exactly the verifier's greedy tokens.
  double alpha_rb = 0.0;
  // Sum the verifier's -log p of every emitted token (SpeculativeStats::nll): the quality
  // of a BiLD run's text under the large model, from the rows the verify passes computed
  // anyway (a softmax over the vocabulary per token, so off when timing).
  bool score = false;
};

struct SpeculativeStats {
  int64_t generated = 0;     // new tokens emitted (the prefill's first one included)
  int64_t proposed = 0;      // draft tokens verified
  int64_t accepted = 0;      // of those, kept
  int64_t verify_steps = 0;  // verify passes (the prefill not counted)
  double prefill_seconds = 0, draft_seconds = 0, verify_seconds = 0;
  // "fast decode rows" (bit-identical to plain decode), or "ATen layers (<reason>)".
  std::string verify_path;
  double nll = 0.0;  // with SpeculativeOptions::score: sum of the verifier's -log p, emitted tokens
  double perplexity() const { return generated ? std::exp(nll / static_cast<double>(generated)) : 0.0; }
  double acceptance_rate() const { return proposed ? static_cast<double>(accepted) / static_cast<double>(proposed) : 0.0; }
  // Tokens emitted per verify pass (accepted drafts + the verifier's own token).
  double tokens_per_step() const {
    return verify_steps ? static_cast<double>(generated - 1) / static_cast<double>(verify_steps) : 0.0;
  }
};

// Throws fsq::Error on an empty prompt, gamma outside [1, kMaxDraft], a negative alpha_rb,
// or prompt + new tokens past the verifier's max_position_embeddings. Returns prompt +
// generated ids; `on_token` (optional) sees each new id in order.
std::vector<int32_t> generate_speculative(const LlamaModel& verifier, Proposer& proposer,
                                          const std::vector<int32_t>& prompt, const SpeculativeOptions& opts,
                                          SpeculativeStats* stats = nullptr,
                                          const std::function<void(int32_t)>& on_token = {});

// The index of the largest of row[0, n) (the first on ties, as at::argmax).
int32_t argmax_row(const float* row, int64_t n);
// -log softmax(row)[id], in double.
double neg_log_prob(const float* row, int64_t n, int32_t id);
// The largest softmax probability of row[0, n).
double top_prob(const float* row, int64_t n);

}  // namespace fsq::speculative
