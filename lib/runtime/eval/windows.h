// Evaluation windows: how a token stream is cut into fixed-length model inputs and which
// positions are scored, per protocol (DESIGN.md "Evaluation protocol"). Pure functions on
// token ids, so every protocol is unit-tested without a model.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fsq {

enum class Protocol {
  Gptq,       // GPTQ/AutoAWQ: non-overlapping windows of the default tokenization
  LlamaCpp,   // llama-perplexity: score the second half of each n_ctx window
  BosWindow,  // [BOS] + next seq_len-1 tokens, all non-BOS tokens scored (MANIFEST numbers)
};

Protocol parse_protocol(std::string_view name);  // throws fsq::Error naming --protocol
std::string protocol_name(Protocol p);           // "gptq", "llama.cpp", "bos-window"
const std::vector<std::string>& protocol_names();

// One model input. The logits at positions p in [score_begin, score_end) score ids[p + 1].
struct Window {
  std::vector<int32_t> ids;
  int64_t score_begin = 0;
  int64_t score_end = 0;
  int64_t scored() const { return score_end - score_begin; }
};

struct WindowPlan {
  Protocol protocol = Protocol::Gptq;
  int64_t seq_len = 0;
  int64_t stride = 0;          // tokens of the stream consumed per window
  std::string bos_policy;      // human-readable, stamped into the report
  int64_t stream_tokens = 0;   // tokens in the stream the windows were cut from
  int64_t total_windows = 0;   // windows the stream holds before --max-windows
  std::vector<Window> windows;
  int64_t scored_tokens() const;
};

struct WindowOptions {
  Protocol protocol = Protocol::Gptq;
  int64_t seq_len = 2048;
  int32_t bos_id = -1;     // the tokenizer's BOS (-1: none)
  bool add_bos = false;    // the tokenizer's default add-BOS flag
  int64_t max_windows = 0; // 0: all
  std::string source;      // names the token stream in errors (the data file)
};

// `text_ids` is tokenizer.encode(text): no special tokens. Each protocol adds BOS itself.
// Throws fsq::Error when the options cannot produce a scored token (seq_len too small,
// bos-window without a BOS id) or the stream is too short for one window.
WindowPlan make_windows(const std::vector<int32_t>& text_ids, const WindowOptions& opts);

// The sequence length to use: `requested` if given (must be <= max_positions), else
// min(kDefaultSeqLen, max_positions). Throws fsq::Error naming --seq-len.
inline constexpr int64_t kDefaultSeqLen = 2048;
int64_t resolve_seq_len(std::optional<int64_t> requested, int64_t max_positions);

}  // namespace fsq
