#include "runtime/speculative/draft_model_proposer.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>

#include "common/error.h"
#include "runtime/speculative/speculative_decode.h"

namespace fsq::speculative {

DraftModelProposer::DraftModelProposer(const LlamaModel& draft, int64_t capacity, DraftOptions opts)
    : model_(draft), capacity_(capacity), opts_(std::move(opts)) {
  if (!(opts_.alpha_fb >= 0.0 && opts_.alpha_fb <= 1.0))
    throw Error("--alpha-fb", "the fallback threshold is a probability", "0..1", std::to_string(opts_.alpha_fb));
  if (capacity_ > draft.config().max_position_embeddings)
    throw Error("--draft", "prompt + new tokens = " + std::to_string(capacity_) + " exceed the draft model's maximum " +
                               std::to_string(draft.config().max_position_embeddings));
}

std::string DraftModelProposer::describe() const {
  if (opts_.alpha_fb <= 0.0) return opts_.name;
  char buf[64];
  std::snprintf(buf, sizeof buf, " (alpha_fb %.3g)", opts_.alpha_fb);
  return opts_.name + buf;
}

void DraftModelProposer::feed(const int64_t* ids, int64_t count) {
  const int64_t vocab = model_.config().vocab_size;
  ++passes_;
  // Up to 8 positions on the fast rows; a prompt (or a model off the fast path) on the layers.
  rows_.resize(static_cast<size_t>(std::max<int64_t>(count, 1) * vocab));
  if (count <= 8 && model_.forward_positions(ids, count, cache_, rows_.data())) {
    last_.assign(rows_.begin() + (count - 1) * vocab, rows_.begin() + count * vocab);
    return;
  }
  const at::Tensor t = at::from_blob(const_cast<int64_t*>(ids), {1, count}, at::kLong).to(model_.options().device);
  const at::Tensor out = model_.forward(t, &cache_, LlamaModel::Logits::Last)[0][-1].to(at::kCPU, at::kFloat).contiguous();
  last_.assign(out.data_ptr<float>(), out.data_ptr<float>() + vocab);
}

void DraftModelProposer::begin(const VerifierState& state) {
  cache_ = model_.new_cache(1, capacity_);
  passes_ = 0;
  // The draft's cache holds every token but the pending one, as the verifier's does; the
  // pending token goes in at the first proposal.
  const std::vector<int32_t>& tokens = *state.tokens;
  if (tokens.size() > 1) {
    const std::vector<int64_t> ids(tokens.begin(), tokens.end() - 1);
    feed(ids.data(), static_cast<int64_t>(ids.size()));
  }
}

void DraftModelProposer::propose(const VerifierState& state, int64_t max_tokens, std::vector<int32_t>& draft) {
  const std::vector<int32_t>& tokens = *state.tokens;
  const int64_t vocab = model_.config().vocab_size;
  // Catch up on what the draft has not run: the pending token, and after a fully accepted
  // proposal the last draft token too.
  const auto have = static_cast<size_t>(cache_.length);
  if (have >= tokens.size()) throw Error("speculative", "draft cache ahead of the sequence");  // a bug, not input
  std::vector<int64_t> ids(tokens.begin() + static_cast<std::ptrdiff_t>(have), tokens.end());
  feed(ids.data(), static_cast<int64_t>(ids.size()));
  for (int64_t i = 0; i < max_tokens; ++i) {
    if (opts_.alpha_fb > 0.0 && top_prob(last_.data(), vocab) < opts_.alpha_fb) break;
    const int64_t next = argmax_row(last_.data(), vocab);
    draft.push_back(static_cast<int32_t>(next));
    // The last draft token's own logits are not needed now; it goes in with the next catch-up.
    if (i + 1 < max_tokens && cache_.length < capacity_) feed(&next, 1);
    else break;
  }
}

void DraftModelProposer::accepted(const VerifierState& state, int64_t /*accepted*/, int32_t /*next*/) {
  // Keep what matches the sequence: every position the draft ran below tokens.size() - 1 is
  // a kept token (the pending one and the accepted drafts), the rest is rolled back.
  cache_.length = std::min<int64_t>(cache_.length, static_cast<int64_t>(state.tokens->size()) - 1);
}

}  // namespace fsq::speculative
