#include "runtime/eval/layer_latency.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "common/error.h"
#include "runtime/eval/timing.h"
#include "runtime/model.h"

namespace fsq {
namespace {

using timing::Clock;
using timing::seconds_since;

// Final norm and lm_head on one position of `batch` sequences, as a prompt's last position
// or a decode step runs them.
double head_seconds(const LlamaModel& m, int64_t batch, const LatencyGrid& g) {
  const auto opts = at::TensorOptions().dtype(m.options().compute_dtype).device(m.options().device);
  at::Tensor hidden = at::randn({batch, 1, m.config().hidden_size}, at::TensorOptions().dtype(at::kFloat)).to(opts);
  return timing::median_time(g.min_seconds, g.max_reps, [&] {
           auto t0 = Clock::now();
           m.head(hidden).argmax(-1).to(at::kCPU);
           return seconds_since(t0);
         })
      .first;
}

double prefill_seconds(const LlamaModel& m, int64_t batch, int64_t len, const LatencyGrid& g) {
  at::Tensor ids = timing::synthetic_ids(batch, len, m.config().vocab_size, m.options().device);
  return timing::median_time(g.min_seconds, g.max_reps, [&] {
           auto t0 = Clock::now();
           m.forward(ids, nullptr, LlamaModel::Logits::Last).select(1, 0).argmax(-1).to(at::kCPU);
           return seconds_since(t0);
         })
      .first;
}

// Seconds per step of `steps` decode steps starting at `context` cached positions.
double decode_step_seconds(const LlamaModel& m, int64_t batch, int64_t context, const LatencyGrid& g) {
  KVCache cache = m.new_cache(batch, context + g.decode_steps);
  for (auto& t : cache.k) t.zero_();
  for (auto& t : cache.v) t.zero_();
  at::Tensor first = timing::synthetic_ids(batch, 1, m.config().vocab_size, m.options().device);
  const double run = timing::median_time(g.min_seconds, g.max_reps, [&] {
                       cache.length = context;
                       at::Tensor next = first;
                       auto t0 = Clock::now();
                       for (int64_t s = 0; s < g.decode_steps; ++s) next = m.forward(next, &cache).select(1, 0).argmax(-1, true);
                       next.to(at::kCPU);
                       return seconds_since(t0);
                     }).first;
  return run / static_cast<double>(g.decode_steps);
}

}  // namespace

void check_latency_grid(const LatencyGrid& g, int64_t max_pos) {
  auto positive = [](const std::vector<int64_t>& v, const char* what) {
    if (v.empty()) throw Error(what, "give at least one value");
    for (int64_t x : v)
      if (x < 1) throw Error(what, "values must be at least 1");
  };
  positive(g.prefill_batches, "--prefill-batches");
  positive(g.prefill_lengths, "--prefill-lengths");
  positive(g.decode_batches, "--decode-batches");
  positive(g.decode_contexts, "--decode-contexts");
  if (g.decode_steps < 1) throw Error("--decode-steps", "must be at least 1");
  for (int64_t l : g.prefill_lengths)
    if (l > max_pos) throw Error("--prefill-lengths", std::to_string(l) + " exceeds the model's " + std::to_string(max_pos) + " positions");
  for (int64_t c : g.decode_contexts)
    if (c + g.decode_steps > max_pos)
      throw Error("--decode-contexts", std::to_string(c) + " + " + std::to_string(g.decode_steps) + " steps exceeds the model's " +
                                           std::to_string(max_pos) + " positions");
}

std::vector<LatencyPoint> measure_layer_latency(const LlamaModel& model, const LatencyGrid& grid,
                                                const std::function<void(int, int)>& progress) {
  check_latency_grid(grid, model.config().max_position_embeddings);
  const double layers = static_cast<double>(model.config().num_layers);
  const int total = static_cast<int>(grid.prefill_batches.size() * grid.prefill_lengths.size() +
                                     grid.decode_batches.size() * grid.decode_contexts.size());
  std::vector<LatencyPoint> out;
  auto add = [&](LatencyPoint p) {
    p.layer_seconds = std::max(p.model_seconds - p.head_seconds, 0.01 * p.model_seconds) / layers;
    out.push_back(p);
    if (progress) progress(static_cast<int>(out.size()), total);
  };
  for (int64_t b : grid.prefill_batches) {
    const double head = head_seconds(model, b, grid);
    for (int64_t len : grid.prefill_lengths) add({true, b, len, 0, prefill_seconds(model, b, len, grid), head, 0});
  }
  for (int64_t b : grid.decode_batches) {
    const double head = head_seconds(model, b, grid);
    for (int64_t ctx : grid.decode_contexts)
      // The steps attend over ctx + 1 .. ctx + steps positions: their mean, rounded down.
      add({false, b, 1, ctx + (grid.decode_steps + 1) / 2, decode_step_seconds(model, b, ctx, grid), head, 0});
  }
  return out;
}

}  // namespace fsq
