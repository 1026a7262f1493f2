// The evaluation report: everything a run measured and the provenance needed to reproduce
// it, rendered as human-readable text (for stdout) and as JSON (for --json).
#pragma once

#include <cstdint>
#include <optional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/eval/speed.h"

namespace fsq {

struct ModelInfo {
  std::string path;
  std::string weights_sha256;
  std::string architecture;
  int64_t parameters = 0;
  int64_t max_position_embeddings = 0;
  double load_seconds = 0.0;
  std::map<std::string, int64_t> matmuls;  // LlamaModel::matmul_kinds(): which kernels ran
  // Integer-only models (LlamaModel::integer_only()): the operations that ran in integers and
  // those that stayed in floating point; both empty otherwise.
  std::vector<std::string> integer_ops, float_ops;
  // How cached single-token decode steps run: "fast" (runtime/fast_decode.h, batches up to 8)
  // or "aten: <why the fast path is unavailable>".
  std::string decode_path;
  // "int8 activations in N of M linears" when packed linears multiply prompts and windows on
  // int8 activations (RuntimeOptions::int8_prefill_activations); "" when none do.
  std::string prefill_path;
};

struct DatasetInfo {
  std::string path;
  std::string sha256;
  int64_t bytes = 0;
  int64_t tokens = 0;  // tokenizer.encode(text), no special tokens
};

struct PerplexityInfo {
  std::string protocol;
  int64_t seq_len = 0;
  int64_t stride = 0;
  std::string bos_policy;
  int64_t windows = 0;
  int64_t total_windows = 0;  // before --max-windows
  int64_t scored_tokens = 0;
  int64_t batch_size = 0;
  double nll_sum = 0.0;
  double mean_nll = 0.0;
  double ppl = 0.0;
  double seconds = 0.0;
};

struct CompareInfo {
  ModelInfo reference;
  std::string tokenizer_match;  // how the shared tokenizer was established
  std::string reference_cache;  // --reference-cache file ("" without one)
  bool reference_cache_hit = false;  // its rows were read, not computed
  int64_t reference_cache_trimmed_files = 0;   // older cache files deleted to keep within the limit
  uint64_t reference_cache_trimmed_bytes = 0;
  double mean_kl = 0.0;
  double p99_kl = 0.0;
  double max_kl = 0.0;
  double top1_agreement = 0.0;
  double ref_ppl = 0.0;
  double ref_mean_nll = 0.0;
  double ppl_delta = 0.0;  // model ppl - reference ppl
};

struct EvalReport {
  std::string fsq_version;
  ModelInfo model;
  std::string dtype;
  std::string device;
  int threads = 0;
  // How idle worker threads wait ("OMP_WAIT_POLICY unset GOMP_SPINCOUNT=3000 OPENBLAS_THREAD_TIMEOUT=4"): speed
  // depends on it (tools/fsq/wait_policy.h). "" when not recorded.
  std::string thread_waits;
  std::optional<std::string> tokenizer_sha256;
  std::optional<std::string> tokenizer_kind;
  std::optional<DatasetInfo> dataset;
  std::optional<PerplexityInfo> perplexity;
  std::optional<CompareInfo> compare;
  std::optional<SpeedResult> speed;
  std::string speed_skipped;  // why speed was not measured although asked for ("" when it was)
  int64_t peak_rss_bytes = 0;
  // Weight memory mapped after loading (runtime/weight_memory.h) and the kernel's transparent
  // huge page mode, which decides whether it got 2 MiB pages ("never": decode runs slower).
  int64_t weight_memory_bytes = 0;
  std::string huge_pages;
};

nlohmann::json report_json(const EvalReport& r);
std::string report_text(const EvalReport& r);

}  // namespace fsq
