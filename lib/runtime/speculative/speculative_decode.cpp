#include "runtime/speculative/speculative_decode.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "common/error.h"

namespace fsq::speculative {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The verify pass: ids[0, count) at cache.length.. into logits [count, vocab]; cache.length
// advances by count. The fast rows when the model takes them, else the ATen layers.
void verify_pass(const LlamaModel& model, const std::vector<int64_t>& ids, KVCache& cache, std::vector<float>& logits,
                 SpeculativeStats& stats) {
  const auto count = static_cast<int64_t>(ids.size());
  const int64_t vocab = model.config().vocab_size;
  logits.resize(static_cast<size_t>(count * vocab));
  if (model.forward_positions(ids.data(), count, cache, logits.data())) {
    if (stats.verify_path.empty()) stats.verify_path = "fast decode rows";
    return;
  }
  if (stats.verify_path.empty()) {
    const std::string& why = model.fast_decode_unavailable();
    stats.verify_path = "ATen layers (" + (why.empty() ? std::string("the cache does not fit the fast path") : why) + ")";
  }
  const at::Tensor t = at::tensor(ids, at::kLong).view({1, count}).to(model.options().device);
  const at::Tensor out = model.forward(t, &cache, LlamaModel::Logits::All)[0].to(at::kCPU, at::kFloat).contiguous();
  std::copy(out.data_ptr<float>(), out.data_ptr<float>() + count * vocab, logits.begin());
}

}  // namespace

int32_t argmax_row(const float* row, int64_t n) {
  return static_cast<int32_t>(std::max_element(row, row + n) - row);
}

double neg_log_prob(const float* row, int64_t n, int32_t id) {
  const double top = *std::max_element(row, row + n);
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) total += std::exp(static_cast<double>(row[i]) - top);
  return std::log(total) - (static_cast<double>(row[id]) - top);
}

double top_prob(const float* row, int64_t n) {
  const double top = *std::max_element(row, row + n);
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) total += std::exp(static_cast<double>(row[i]) - top);
  return 1.0 / total;
}

std::vector<int32_t> generate_speculative(const LlamaModel& verifier, Proposer& proposer,
                                          const std::vector<int32_t>& prompt, const SpeculativeOptions& opts,
                                          SpeculativeStats* stats_out, const std::function<void(int32_t)>& on_token) {
  if (prompt.empty()) throw Error("generate", "empty prompt (no tokens); give a prompt or a BOS token");
  if (opts.gamma < 1 || opts.gamma > kMaxDraft)
    throw Error("--gamma", "draft tokens per verify step out of range", "1.." + std::to_string(kMaxDraft),
                std::to_string(opts.gamma));
  if (!(opts.alpha_rb >= 0.0)) throw Error("--alpha-rb", "must be >= 0 (0: the verifier's greedy tokens only)");
  const int64_t total = static_cast<int64_t>(prompt.size()) + opts.max_new_tokens;
  if (total > verifier.config().max_position_embeddings)
    throw Error("generate", "prompt + new tokens = " + std::to_string(total) + " exceeds the model's maximum " +
                                std::to_string(verifier.config().max_position_embeddings));
  SpeculativeStats stats;
  std::vector<int32_t> out = prompt;
  const int64_t vocab = verifier.config().vocab_size;
  bool done = opts.max_new_tokens == 0;
  const auto emit = [&](int32_t id) {
    out.push_back(id);
    ++stats.generated;
    if (on_token) on_token(id);
    done = id == opts.stop_token || stats.generated >= opts.max_new_tokens;
  };
  KVCache cache = verifier.new_cache(1, std::max<int64_t>(total, 1));
  if (!done) {
    // The prefill and its first token: the very call plain greedy generation makes.
    const auto t0 = Clock::now();
    std::vector<int64_t> ids64(prompt.begin(), prompt.end());
    const at::Tensor ids = at::tensor(ids64, at::kLong).view({1, -1}).to(verifier.options().device);
    const at::Tensor logits = verifier.forward(ids, &cache, LlamaModel::Logits::Last);
    const auto first = static_cast<int32_t>(logits[0][-1].argmax().item<int64_t>());
    if (opts.score) {
      const at::Tensor row = logits[0][-1].to(at::kCPU, at::kFloat).contiguous();
      stats.nll += neg_log_prob(row.data_ptr<float>(), vocab, first);
    }
    emit(first);
    stats.prefill_seconds = seconds_since(t0);
  }
  const VerifierState state{&verifier, &cache, &out};
  if (!done) proposer.begin(state);
  std::vector<int32_t> draft;
  std::vector<int64_t> ids;
  std::vector<float> logits;
  while (!done) {
    // Room: a pass of k drafts emits up to k + 1 tokens and writes k + 1 positions.
    const int64_t max_draft = std::min(opts.gamma, opts.max_new_tokens - stats.generated - 1);
    draft.clear();
    if (max_draft > 0) {
      const auto t0 = Clock::now();
      proposer.propose(state, max_draft, draft);
      stats.draft_seconds += seconds_since(t0);
      if (static_cast<int64_t>(draft.size()) > max_draft)
        throw Error("speculative", proposer.describe() + " proposed " + std::to_string(draft.size()) +
                                       " tokens, more than the " + std::to_string(max_draft) + " asked for");
    }
    ids.assign(1, out.back());
    ids.insert(ids.end(), draft.begin(), draft.end());
    const int64_t base = cache.length;
    const auto t1 = Clock::now();
    verify_pass(verifier, ids, cache, logits, stats);
    ++stats.verify_steps;
    stats.proposed += static_cast<int64_t>(draft.size());
    int64_t kept = 0;
    for (; kept < static_cast<int64_t>(draft.size()); ++kept) {
      const float* row = &logits[static_cast<size_t>(kept * vocab)];
      const int32_t d = draft[static_cast<size_t>(kept)];
      if (d < 0 || d >= vocab) break;
      if (d == argmax_row(row, vocab)) continue;
      if (opts.alpha_rb > 0.0 && neg_log_prob(row, vocab, d) <= opts.alpha_rb) continue;
      break;
    }
    const int32_t next = argmax_row(&logits[static_cast<size_t>(kept * vocab)], vocab);
    cache.length = base + kept + 1;  // roll back the rejected positions
    stats.verify_seconds += seconds_since(t1);
    stats.accepted += kept;
    for (int64_t i = 0; i <= kept && !done; ++i) {
      const int32_t id = i < kept ? draft[static_cast<size_t>(i)] : next;
      if (opts.score) stats.nll += neg_log_prob(&logits[static_cast<size_t>(i * vocab)], vocab, id);
      emit(id);
    }
    if (!done) proposer.accepted(state, kept, next);
  }
  if (stats_out) *stats_out = stats;
  return out;
}

}  // namespace fsq::speculative
