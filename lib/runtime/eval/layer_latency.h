// Per-layer latencies of a loaded model for the planner's profile (fsq profile): prompts of
// several micro-batch sizes and lengths, and decode steps of several batch sizes over
// several cached lengths, each timed through the whole model as eval runs it (the fast
// decode path included); the head is timed on its own and taken off, and the rest divided
// by the number of decoder layers. Decode steps run over a zeroed KV cache whose length is
// set directly: the time of a step does not depend on what the cache holds.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace fsq {

class LlamaModel;

struct LatencyGrid {
  std::vector<int64_t> prefill_batches = {1, 2};
  std::vector<int64_t> prefill_lengths = {32, 64, 128, 256};
  std::vector<int64_t> decode_batches = {1, 2, 4, 8};
  std::vector<int64_t> decode_contexts = {32, 128, 512};
  int64_t decode_steps = 8;  // timed steps per repetition
  // Each point repeats (after one warm-up) until min_seconds were spent or max_reps runs;
  // the median counts.
  double min_seconds = 0.2;
  int max_reps = 20;
};

struct LatencyPoint {
  bool prefill = true;
  int64_t batch = 1;
  int64_t tokens = 1;    // prefill: prompt length; decode: 1
  int64_t context = 0;   // decode: mean cached positions over the timed steps
  double model_seconds = 0;  // the whole forward (one decode step)
  double head_seconds = 0;   // final norm and lm_head on `batch` rows
  double layer_seconds = 0;  // (model - head) / layers, at least 1 % of model / layers
};

// Throws fsq::Error naming the option (--prefill-lengths, ...) when a list is empty, a value
// is below 1 or a length does not fit `max_positions`.
void check_latency_grid(const LatencyGrid& grid, int64_t max_positions);

// Throws fsq::Error when a length exceeds the model's positions. `progress(done, total)`
// is called after each point.
std::vector<LatencyPoint> measure_layer_latency(const LlamaModel& model, const LatencyGrid& grid,
                                                const std::function<void(int, int)>& progress = {});

}  // namespace fsq
