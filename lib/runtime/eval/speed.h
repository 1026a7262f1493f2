// Throughput measurements of a loaded model: prefill tokens/s for given prompt lengths and
// decode tokens/s with the KV cache at given batch sizes, each after a warm-up run.
#pragma once

#include <cstdint>
#include <vector>

namespace fsq {

class LlamaModel;

struct SpeedOptions {
  std::vector<int64_t> prefill_lengths = {128, 512};  // capped at max_position_embeddings
  std::vector<int64_t> decode_batches = {1, 8};
  int64_t decode_prompt = 16;   // prompt prefilled before the timed decode steps
  int64_t decode_steps = 64;    // capped so prompt + steps fit the context
  // Each measurement repeats (after one warm-up) until min_seconds were spent or max_reps
  // runs were made; the median is reported. Small models get many runs (stable medians on a
  // busy machine), large ones a single run.
  double min_seconds = 0.5;
  int max_reps = 50;
};

struct PrefillSpeed {
  int64_t tokens = 0;
  int reps = 0;
  double seconds = 0.0;  // median over repetitions
  double tokens_per_s() const { return seconds > 0 ? double(tokens) / seconds : 0.0; }
};

struct DecodeSpeed {
  int64_t batch = 0;
  int64_t prompt = 0;
  int64_t steps = 0;
  int reps = 0;
  double seconds = 0.0;  // median time of `steps` decode steps
  // Generated tokens per second over the whole batch (batch * steps / seconds).
  double tokens_per_s() const { return seconds > 0 ? double(batch * steps) / seconds : 0.0; }
};

struct SpeedResult {
  std::vector<PrefillSpeed> prefill;
  std::vector<DecodeSpeed> decode;
};

SpeedResult measure_speed(const LlamaModel& model, const SpeedOptions& opts = {});

}  // namespace fsq
