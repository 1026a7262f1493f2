#include "runtime/speculative/qspec_proposer.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>

#include "common/error.h"
#include "runtime/activation_mode.h"
#include "formats/architectures.h"
#include "runtime/decoder_layer.h"
#include "runtime/model.h"
#include "runtime/packed_kernel_linear.h"
#include "runtime/speculative/speculative_decode.h"

namespace fsq::speculative {

int64_t mark_qspec_draft_linears(const LlamaModel& model) {
  int64_t marked = 0;
  for (const DecoderLayer& layer : model.layers())
    for (const LinearGroup& group : model.arch().groups)
      for (const std::string& role : group.roles)
        if (auto* packed = dynamic_cast<PackedKernelLinear*>(layer.linear(role).get())) {
          packed->set_draft_int4(!group.norm.empty());
          marked += group.norm.empty() ? 0 : 1;
        }
  return marked;
}

void QSpecProposer::begin(const VerifierState& state) {
  if (state.model == nullptr || state.cache == nullptr || state.tokens == nullptr || state.tokens->empty())
    throw Error("--speculate qspec", "the proposer needs the verifier's model, cache and tokens");
  mark_qspec_draft_linears(*state.model);
  steps_ = 0;
  seconds_ = 0.0;
}

void QSpecProposer::propose(const VerifierState& state, int64_t max_tokens, std::vector<int32_t>& draft) {
  const auto start_time = std::chrono::steady_clock::now();
  const LlamaModel& model = *state.model;
  KVCache& cache = *state.cache;
  const int64_t vocab = model.config().vocab_size, start = cache.length;
  // Drafts may fill the cache up to its capacity; the verify pass needs one row more.
  const int64_t room = std::min(max_tokens, cache.capacity - start - 1);
  logits_.resize(static_cast<size_t>(vocab));
  int64_t id = state.tokens->back();
  {
    const ScopedDecodeActivations int4(DecodeActivations::Int4PerToken);
    for (int64_t k = 0; k < room; ++k) {
      if (!model.forward_positions(&id, 1, cache, logits_.data())) {
        // Off the fast path: the ATen layers, whose packed linears take the W4A4 GEMV for one row too.
        const at::Tensor t = at::full({1, 1}, id, at::kLong).to(model.options().device);
        const at::Tensor out = model.forward(t, &cache, LlamaModel::Logits::Last)[0][-1].to(at::kCPU, at::kFloat).contiguous();
        std::copy(out.data_ptr<float>(), out.data_ptr<float>() + vocab, logits_.begin());
      }
      ++steps_;
      id = argmax_row(logits_.data(), vocab);
      draft.push_back(static_cast<int32_t>(id));
    }
  }
  cache.length = start;  // the draft's K/V stay past the length, to be overwritten
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
}

}  // namespace fsq::speculative
