#include "runtime/eval/perplexity.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "common/error.h"

namespace fsq {
namespace {

std::string progress_detail(const NllStats& s, const std::optional<CompareStats>& c) {
  char buf[96];
  if (c)
    std::snprintf(buf, sizeof buf, "ppl %.4f kl %.3g top1 %.4f", s.ppl(), c->mean_kl(),
                  c->top1_agreement());
  else
    std::snprintf(buf, sizeof buf, "ppl %.4f", s.ppl());
  return buf;
}

void check_plan(const WindowPlan& plan) {
  for (const auto& w : plan.windows) {
    if (static_cast<int64_t>(w.ids.size()) != plan.seq_len || w.score_begin != plan.windows[0].score_begin ||
        w.score_end != plan.windows[0].score_end)
      throw Error("windows", "all windows must have seq_len ids and one scoring range");
  }
}

// The running sum turns NaN/Inf at the first bad window and stays so: fail there, naming it.
void check_finite(const NllStats& stats, size_t first, size_t count, const char* which) {
  if (std::isfinite(stats.nll_sum)) return;
  const std::string windows = count == 1 ? "window " + std::to_string(first)
                                         : "windows " + std::to_string(first) + "-" + std::to_string(first + count - 1);
  throw Error(windows, std::string("the ") + which + "'s log-likelihood is not finite (NaN/Inf logits: weights or "
                           "activations overflow the compute dtype?); pass --allow-nonfinite to report it anyway");
}

}  // namespace

double NllStats::mean_nll() const {
  return tokens > 0 ? nll_sum / static_cast<double>(tokens) : 0.0;
}

double NllStats::ppl() const { return std::exp(mean_nll()); }

void add_nll(const at::Tensor& rows, const at::Tensor& targets, NllStats& stats) {
  at::Tensor logp = at::log_softmax(rows.to(at::kFloat), -1);
  at::Tensor picked = logp.gather(-1, targets.to(at::kLong).unsqueeze(-1)).squeeze(-1);
  stats.nll_sum -= picked.to(at::kDouble).sum().to(at::kCPU).item<double>();
  stats.tokens += rows.size(0);
}

ScoredRows scored_rows(const at::Tensor& logits, const at::Tensor& ids, const Window& w) {
  if (logits.dim() != 3 || ids.dim() != 2 || logits.size(0) != ids.size(0) ||
      logits.size(1) != ids.size(1))
    throw Error("logits", "shape does not match the window batch", "[B, T, V] with ids [B, T]",
                std::to_string(logits.dim()) + "-d logits");
  const int64_t v = logits.size(2);
  at::Tensor rows = logits.slice(1, w.score_begin, w.score_end).reshape({-1, v});
  at::Tensor targets = ids.slice(1, w.score_begin + 1, w.score_end + 1).reshape({-1});
  return {rows, targets.to(logits.device())};
}

at::Tensor batch_ids(const WindowPlan& plan, size_t first, size_t count, c10::Device device) {
  const int64_t L = plan.seq_len;
  at::Tensor ids = at::empty({static_cast<int64_t>(count), L}, at::kLong);
  int64_t* p = ids.data_ptr<int64_t>();
  for (size_t b = 0; b < count; ++b) {
    const auto& w = plan.windows.at(first + b).ids;
    std::copy(w.begin(), w.end(), p + static_cast<int64_t>(b) * L);
  }
  return ids.to(device);
}

RefRowsFn reference_rows(const LogitsFn& ref, const WindowPlan& plan) {
  const Window shape = plan.windows.empty() ? Window{} : plan.windows.front();
  return [&ref, shape](const at::Tensor& ids, size_t, size_t) { return scored_rows(ref(ids), ids, shape).rows; };
}

EvalResult run_eval(const LogitsFn& model, const LogitsFn* ref, const WindowPlan& plan,
                    const EvalRunOptions& opts) {
  if (!ref) return run_eval_rows(model, nullptr, plan, opts);
  RefRowsFn rows = reference_rows(*ref, plan);
  return run_eval_rows(model, &rows, plan, opts);
}

EvalResult run_eval_rows(const LogitsFn& model, const RefRowsFn* ref, const WindowPlan& plan,
                         const EvalRunOptions& opts) {
  if (plan.windows.empty()) throw Error("windows", "nothing to evaluate");
  if (opts.batch_size < 1)
    throw Error("--batch-size", "must be positive", ">= 1", std::to_string(opts.batch_size));
  check_plan(plan);
  auto start = std::chrono::steady_clock::now();
  EvalResult res;
  if (ref) {
    res.ref.emplace();
    res.compare.emplace();
  }
  const size_t total = plan.windows.size();
  Progress bar(ref ? "eval+compare" : "eval", static_cast<int64_t>(total), opts.progress);
  const Window& shape = plan.windows.front();
  for (size_t first = 0; first < total; first += static_cast<size_t>(opts.batch_size)) {
    size_t count = std::min(total - first, static_cast<size_t>(opts.batch_size));
    at::Tensor ids = batch_ids(plan, first, count, opts.device);
    at::Tensor logits = model(ids);
    ScoredRows mine = scored_rows(logits, ids, shape);
    add_nll(mine.rows, mine.targets, res.model);
    if (!opts.allow_nonfinite) check_finite(res.model, first, count, "model");
    if (ref) {
      at::Tensor theirs = (*ref)(ids, first, count).to(mine.rows.device());
      if (theirs.dim() != 2 || theirs.size(0) != mine.rows.size(0) || theirs.size(1) != mine.rows.size(1))
        throw Error("reference", "scored rows do not match the model's", std::to_string(mine.rows.size(0)) + " rows",
                    std::to_string(theirs.size(0)) + " rows");
      add_nll(theirs, mine.targets, *res.ref);
      if (!opts.allow_nonfinite) check_finite(*res.ref, first, count, "reference model");
      add_compare(mine.rows, theirs, *res.compare);
    }
    res.windows += static_cast<int64_t>(count);
    bar.update(res.windows, progress_detail(res.model, res.compare));
  }
  bar.finish(progress_detail(res.model, res.compare));
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return res;
}

int64_t auto_batch_size(int64_t seq_len, int64_t vocab, int64_t heads, bool compare) {
  constexpr double kBudgetBytes = double(int64_t{1} << 30);
  constexpr int64_t kMaxBatch = 8;
  // fp32 logits (+ their log-softmax) and one layer's attention scores per window.
  double per_window = 4.0 * (2.0 * double(seq_len) * double(vocab) * (compare ? 2 : 1) +
                             double(heads) * double(seq_len) * double(seq_len));
  int64_t b = static_cast<int64_t>(kBudgetBytes / std::max(per_window, 1.0));
  return std::clamp<int64_t>(b, 1, kMaxBatch);
}

}  // namespace fsq
