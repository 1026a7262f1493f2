#include "runtime/speculative/speculative_speed.h"

#include <algorithm>
#include <chrono>

#include "runtime/generate.h"

namespace fsq::speculative {
namespace {

using Clock = std::chrono::steady_clock;

// Decode tokens/s of one run: tokens after the first over the time from the first to the last.
struct TokenClock {
  Clock::time_point first, last;
  int64_t tokens = 0;
  void operator()(int32_t) {
    last = Clock::now();
    if (tokens++ == 0) first = last;
  }
  double tokens_per_s() const {
    const double s = std::chrono::duration<double>(last - first).count();
    return tokens > 1 && s > 0 ? static_cast<double>(tokens - 1) / s : 0.0;
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

SpeculativeSpeed measure_speculative_speed(const LlamaModel& verifier, Proposer& proposer,
                                           const std::vector<int32_t>& prompt, const SpeculativeOptions& opts,
                                           int reps) {
  SpeculativeSpeed r;
  r.prompt_tokens = static_cast<int64_t>(prompt.size());
  r.reps = std::max(reps, 1);
  GenerateOptions go;
  go.max_new_tokens = opts.max_new_tokens;
  go.stop_token = opts.stop_token;
  std::vector<double> plain, spec;
  std::vector<int32_t> plain_ids, spec_ids;
  for (int rep = 0; rep <= r.reps; ++rep) {  // rep 0: warm-up
    TokenClock a, b;
    plain_ids = generate_greedy(verifier, prompt, go, std::ref(a));
    spec_ids = generate_speculative(verifier, proposer, prompt, opts, &r.stats, std::ref(b));
    if (rep == 0) continue;
    plain.push_back(a.tokens_per_s());
    spec.push_back(b.tokens_per_s());
  }
  r.new_tokens = static_cast<int64_t>(spec_ids.size()) - r.prompt_tokens;
  r.plain_tokens_per_s = median(plain);
  r.tokens_per_s = median(spec);
  r.same_output = plain_ids == spec_ids;
  return r;
}

}  // namespace fsq::speculative
