// Timing helpers shared by the speed measurements (speed.cpp) and the planner's latency
// profile (layer_latency.cpp).
#pragma once

#include <ATen/core/Tensor.h>

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

namespace fsq::timing {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Deterministic ids [batch, len] that avoid the low special/byte ids; content does not
// change timing.
at::Tensor synthetic_ids(int64_t batch, int64_t len, int64_t vocab, c10::Device device);

// Repeats `once` (which returns its own elapsed seconds, synchronized) after one warm-up,
// until min_seconds were spent or max_reps runs; returns the median and the count.
template <typename F>
std::pair<double, int> median_time(double min_seconds, int max_reps, F&& once) {
  once();  // warm-up: allocator, thread pool, lazy initialization
  std::vector<double> t;
  double spent = 0.0;
  while (t.empty() || (static_cast<int>(t.size()) < max_reps && spent < min_seconds)) {
    t.push_back(once());
    spent += t.back();
  }
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], static_cast<int>(t.size())};
}

}  // namespace fsq::timing
