#include "runtime/eval/windows.h"

#include <algorithm>

#include "common/error.h"

namespace fsq {
namespace {

std::string join_names() {
  std::string out;
  for (const auto& n : protocol_names()) out += (out.empty() ? "" : ", ") + n;
  return out;
}

void require_windows(const std::vector<int32_t>& stream, int64_t needed, int64_t count,
                     const WindowOptions& o) {
  if (count > 0) return;
  throw Error(o.source.empty() ? "token stream" : o.source,
              "too few tokens for one " + protocol_name(o.protocol) + " window of seq_len " +
                  std::to_string(o.seq_len),
              "at least " + std::to_string(needed) + " tokens", std::to_string(stream.size()));
}

size_t limit(int64_t count, int64_t max_windows) {
  return static_cast<size_t>(max_windows > 0 ? std::min(count, max_windows) : count);
}

// The text tokenized once as the model does by default: BOS first only when add_bos.
std::vector<int32_t> default_stream(const std::vector<int32_t>& text_ids, const WindowOptions& o) {
  std::vector<int32_t> stream;
  stream.reserve(text_ids.size() + 1);
  if (o.add_bos && o.bos_id >= 0) stream.push_back(o.bos_id);
  stream.insert(stream.end(), text_ids.begin(), text_ids.end());
  return stream;
}

// Non-overlapping seq_len windows over the default stream (gptq and llama.cpp differ only in
// which positions score and whether BOS overwrites each window's first token).
WindowPlan cut_stream(const std::vector<int32_t>& text_ids, const WindowOptions& o, WindowPlan plan,
                      int64_t score_from, bool bos_replaces_first, const char* bos_policy) {
  const bool bos = o.add_bos && o.bos_id >= 0;
  const std::vector<int32_t> stream = default_stream(text_ids, o);
  const int64_t L = o.seq_len;
  plan.stride = L;
  plan.bos_policy = bos ? bos_policy : "no BOS (tokenizer add_bos is false)";
  plan.stream_tokens = static_cast<int64_t>(stream.size());
  plan.total_windows = plan.stream_tokens / L;
  require_windows(stream, L, plan.total_windows, o);
  size_t n = limit(plan.total_windows, o.max_windows);
  for (size_t w = 0; w < n; ++w) {
    auto first = stream.begin() + static_cast<std::ptrdiff_t>(w) * L;
    Window win{{first, first + L}, score_from, L - 1};
    if (bos && bos_replaces_first) win.ids[0] = o.bos_id;
    plan.windows.push_back(std::move(win));
  }
  return plan;
}

// GPTQ: the default tokenization (BOS first only when add_bos), cut every seq_len tokens.
WindowPlan gptq(const std::vector<int32_t>& text_ids, const WindowOptions& o, WindowPlan plan) {
  return cut_stream(text_ids, o, std::move(plan), 0, false, "BOS once at the start of the stream");
}

// llama-perplexity: stream tokenized with BOS when add_bos; BOS also overwrites each
// window's first token; logits n_ctx/2 .. n_ctx-2 score the following tokens.
WindowPlan llama_cpp(const std::vector<int32_t>& text_ids, const WindowOptions& o, WindowPlan plan) {
  return cut_stream(text_ids, o, std::move(plan), o.seq_len / 2, true,
                    "BOS at the start of the stream and replacing each window's first token");
}

// bos-window: [BOS] + the next seq_len-1 tokens of the BOS-free stream, all of them scored.
WindowPlan bos_window(const std::vector<int32_t>& text_ids, const WindowOptions& o, WindowPlan plan) {
  if (o.bos_id < 0)
    throw Error("--protocol bos-window", "the tokenizer has no BOS token");
  const int64_t L = o.seq_len;
  const int64_t chunk = L - 1;
  plan.stride = chunk;
  plan.bos_policy = "BOS prepended to every window";
  plan.stream_tokens = static_cast<int64_t>(text_ids.size());
  plan.total_windows = plan.stream_tokens / chunk;
  require_windows(text_ids, chunk, plan.total_windows, o);
  size_t n = limit(plan.total_windows, o.max_windows);
  for (size_t w = 0; w < n; ++w) {
    Window win;
    win.ids.reserve(static_cast<size_t>(L));
    win.ids.push_back(o.bos_id);
    auto first = text_ids.begin() + static_cast<std::ptrdiff_t>(w) * chunk;
    win.ids.insert(win.ids.end(), first, first + chunk);
    win.score_begin = 0;
    win.score_end = L - 1;
    plan.windows.push_back(std::move(win));
  }
  return plan;
}

}  // namespace

const std::vector<std::string>& protocol_names() {
  static const std::vector<std::string> names = {"gptq", "llama.cpp", "bos-window"};
  return names;
}

Protocol parse_protocol(std::string_view name) {
  if (name == "gptq") return Protocol::Gptq;
  if (name == "llama.cpp") return Protocol::LlamaCpp;
  if (name == "bos-window") return Protocol::BosWindow;
  throw Error("--protocol", "unknown protocol '" + std::string(name) + "'", join_names(),
              std::string(name));
}

std::string protocol_name(Protocol p) {
  switch (p) {
    case Protocol::Gptq: return "gptq";
    case Protocol::LlamaCpp: return "llama.cpp";
    case Protocol::BosWindow: return "bos-window";
  }
  return "?";
}

int64_t WindowPlan::scored_tokens() const {
  int64_t n = 0;
  for (const auto& w : windows) n += w.scored();
  return n;
}

WindowPlan make_windows(const std::vector<int32_t>& text_ids, const WindowOptions& opts) {
  // llama.cpp scores positions n_ctx/2 .. n_ctx-2, which is empty below 3.
  const int64_t min_len = opts.protocol == Protocol::LlamaCpp ? 3 : 2;
  if (opts.seq_len < min_len)
    throw Error("--seq-len", "too small for protocol " + protocol_name(opts.protocol),
                ">= " + std::to_string(min_len), std::to_string(opts.seq_len));
  if (opts.max_windows < 0)
    throw Error("--max-windows", "must not be negative", ">= 0", std::to_string(opts.max_windows));
  WindowPlan plan;
  plan.protocol = opts.protocol;
  plan.seq_len = opts.seq_len;
  switch (opts.protocol) {
    case Protocol::Gptq: return gptq(text_ids, opts, std::move(plan));
    case Protocol::LlamaCpp: return llama_cpp(text_ids, opts, std::move(plan));
    case Protocol::BosWindow: return bos_window(text_ids, opts, std::move(plan));
  }
  return plan;
}

int64_t resolve_seq_len(std::optional<int64_t> requested, int64_t max_positions) {
  if (!requested) return std::min(kDefaultSeqLen, max_positions);
  if (*requested < 2)
    throw Error("--seq-len", "too small", ">= 2", std::to_string(*requested));
  if (*requested > max_positions)
    throw Error("--seq-len", "exceeds the model's max_position_embeddings",
                "<= " + std::to_string(max_positions), std::to_string(*requested));
  return *requested;
}

}  // namespace fsq
