// What a draft source implements for speculative decoding (issue 59): the loop in
// runtime/speculative/speculative_decode.h asks a Proposer for a few tokens, verifies them
// in one multi-position pass of the verifier (the target model), keeps the longest
// accepted prefix plus the verifier's own next token, and tells the proposer what was kept.
//
// The sequence and the caches, at every call:
//   tokens = prompt + every token emitted so far; the last one, the "pending" token, has
//   no K/V in the verifier's cache yet: verifier cache->length == tokens.size() - 1.
//   A verify pass runs [pending, d1, .., dk] at positions cache->length .. +k, so a draft
//   of k tokens costs one pass of k + 1 rows (k <= kMaxDraft).
//
// Contract of a proposer:
//   begin():    once per generation, after the verifier's prefill of the prompt and its
//               first token (tokens = prompt + that token). A proposer with a model of its
//               own prefills its cache here.
//   propose():  appends between 0 and max_tokens draft ids (1 <= max_tokens <= kMaxDraft)
//               continuing `tokens`. Zero is allowed (the step then verifies the pending
//               token alone: a plain decode step). A proposer that shares the verifier's
//               weights and cache (QSpec) may write its draft K/V into state.cache at
//               positions >= cache->length (the verify pass overwrites every one of them
//               before reading it) but must leave cache->length as it found it, and must
//               not touch positions below it.
//   accepted(): the verifier kept draft[0, accepted) and appended `next`; `tokens` already
//               holds them and cache->length has moved on. A proposer with its own cache
//               rolls it back to the kept prefix here (cache length = kept positions;
//               entries past the length are ignored and later overwritten).
// Proposers are single-threaded objects: one generation at a time, batch 1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fsq {
class LlamaModel;
struct KVCache;
}  // namespace fsq

namespace fsq::speculative {

// The most draft tokens one verify pass takes: pending + drafts fit the fast decoder's
// rows (FastDecoder::kMaxBatch = 8).
constexpr int64_t kMaxDraft = 7;

// The verifier's side, as a proposer sees it (see the contract above).
struct VerifierState {
  const LlamaModel* model = nullptr;           // the verifier (target) model
  KVCache* cache = nullptr;                    // its cache, batch 1: [0, length) is kept
  const std::vector<int32_t>* tokens = nullptr;  // prompt + emitted; back() is pending
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  // For reports: "draft", "bild", "qspec", with its settings.
  virtual std::string describe() const = 0;
  virtual void begin(const VerifierState& state) = 0;
  virtual void propose(const VerifierState& state, int64_t max_tokens, std::vector<int32_t>& draft) = 0;
  virtual void accepted(const VerifierState& state, int64_t accepted, int32_t next) = 0;
};

}  // namespace fsq::speculative
