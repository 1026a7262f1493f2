#include "runtime/eval/speed.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "runtime/eval/timing.h"
#include "runtime/model.h"

namespace fsq {
namespace {

using timing::Clock;
using timing::seconds_since;
using timing::synthetic_ids;

template <typename F>
std::pair<double, int> median_time(const SpeedOptions& o, F&& once) {
  return timing::median_time(o.min_seconds, o.max_reps, once);
}

PrefillSpeed prefill(const LlamaModel& m, int64_t len, const SpeedOptions& o) {
  at::Tensor ids = synthetic_ids(1, len, m.config().vocab_size, m.options().device);
  auto once = [&] {
    auto t0 = Clock::now();
    // A prompt as generation processes it (and as llama-bench's pp test): logits of the
    // last position only. Copying its argmax to the CPU waits for the device.
    m.forward(ids, nullptr, LlamaModel::Logits::Last).select(1, 0).argmax(-1).to(at::kCPU);
    return seconds_since(t0);
  };
  auto [sec, reps] = median_time(o, once);
  return PrefillSpeed{len, reps, sec};
}

DecodeSpeed decode(const LlamaModel& m, int64_t batch, const SpeedOptions& o) {
  const int64_t max_pos = m.config().max_position_embeddings;
  const int64_t prompt = std::clamp<int64_t>(o.decode_prompt, 1, std::max<int64_t>(1, max_pos - 1));
  const int64_t steps = std::clamp<int64_t>(o.decode_steps, 1, std::max<int64_t>(1, max_pos - prompt));
  at::Tensor ids = synthetic_ids(batch, prompt, m.config().vocab_size, m.options().device);
  auto once = [&] {
    KVCache cache = m.new_cache(batch, prompt + steps);
    at::Tensor next = m.forward(ids, &cache, LlamaModel::Logits::Last).select(1, 0).argmax(-1, true);
    next.to(at::kCPU);
    auto t0 = Clock::now();
    for (int64_t s = 0; s < steps; ++s)
      next = m.forward(next, &cache).select(1, 0).argmax(-1, true);
    next.to(at::kCPU);
    return seconds_since(t0);
  };
  auto [sec, reps] = median_time(o, once);
  return DecodeSpeed{batch, prompt, steps, reps, sec};
}

}  // namespace

SpeedResult measure_speed(const LlamaModel& model, const SpeedOptions& opts) {
  SpeedResult r;
  const int64_t max_pos = model.config().max_position_embeddings;
  std::vector<int64_t> lens;
  for (int64_t l : opts.prefill_lengths) {
    int64_t c = std::clamp<int64_t>(l, 1, max_pos);
    if (std::find(lens.begin(), lens.end(), c) == lens.end()) lens.push_back(c);
  }
  for (int64_t l : lens) r.prefill.push_back(prefill(model, l, opts));
  for (int64_t b : opts.decode_batches) r.decode.push_back(decode(model, std::max<int64_t>(1, b), opts));
  return r;
}

}  // namespace fsq
