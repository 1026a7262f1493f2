// Perplexity over evaluation windows, optionally with a reference model run on the same
// windows for KL and top-1 agreement. The model is a function (ids -> logits), so the
// driver is tested with synthetic logits and runs any model the runtime can load.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <optional>

#include "common/progress.h"
#include "runtime/eval/compare.h"
#include "runtime/eval/windows.h"

namespace fsq {

// ids: int64 [B, T] on the model's device -> fp32 logits [B, T, V].
using LogitsFn = std::function<at::Tensor(const at::Tensor& ids)>;

struct NllStats {
  double nll_sum = 0.0;  // natural log, summed in double
  int64_t tokens = 0;
  double mean_nll() const;
  double ppl() const;  // exp(mean_nll)
};

// Adds -log_softmax(rows)[target] per row; log-softmax in fp32 as the reference numbers
// were computed, the sum in double. rows [N, V], targets int64 [N] (same device).
void add_nll(const at::Tensor& rows, const at::Tensor& targets, NllStats& stats);

// Scored logits of a batch of windows that share one scoring range: logits [B, T, V] ->
// rows [B * n, V] and their targets [B * n] (n = w.scored()), window-major.
struct ScoredRows {
  at::Tensor rows;
  at::Tensor targets;
};
ScoredRows scored_rows(const at::Tensor& logits, const at::Tensor& ids, const Window& w);

// Window ids [count, seq_len] (int64) of windows [first, first + count).
at::Tensor batch_ids(const WindowPlan& plan, size_t first, size_t count, c10::Device device);

struct EvalRunOptions {
  int64_t batch_size = 1;
  c10::Device device = c10::Device(c10::kCPU);
  ProgressMode progress = ProgressMode::Auto;
  // A NaN/Inf log-likelihood fails the run naming its windows, unless this is set.
  bool allow_nonfinite = false;
};

struct EvalResult {
  NllStats model;
  std::optional<NllStats> ref;        // with a reference model
  std::optional<CompareStats> compare;
  int64_t windows = 0;
  double seconds = 0.0;
};

// The reference's scored rows [count * n, V] of windows [first, first + count) of the plan
// (ids: their tokens, [count, seq_len]): a model run on the batch, or rows read back from a
// reference cache (reference_cache.h).
using RefRowsFn = std::function<at::Tensor(const at::Tensor& ids, size_t first, size_t count)>;
RefRowsFn reference_rows(const LogitsFn& ref, const WindowPlan& plan);

// Runs every window of `plan` through `model` in batches, scoring `ref`'s rows of the same
// windows against it when given.
EvalResult run_eval_rows(const LogitsFn& model, const RefRowsFn* ref, const WindowPlan& plan,
                         const EvalRunOptions& opts);
// The same with the reference as a model.
EvalResult run_eval(const LogitsFn& model, const LogitsFn* ref, const WindowPlan& plan,
                    const EvalRunOptions& opts);

// Largest batch <= 8 whose logits and attention scores fit a ~1 GiB budget (at least 1).
int64_t auto_batch_size(int64_t seq_len, int64_t vocab, int64_t heads, bool compare);

}  // namespace fsq
