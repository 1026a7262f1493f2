#include "runtime/eval/evaluate.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

#include "common/error.h"
#include "common/process.h"
#include "common/sha256.h"
#include "common/text_file.h"
#include "formats/checkpoint.h"
#include "formats/tokenizer.h"
#include "runtime/cuda/cuda_backend.h"
#include "runtime/cuda/decode_model.h"  // cuda::Decoder, whose unique_ptr becomes a shared_ptr
#include "runtime/decoder_choice.h"
#include "runtime/eval/decoder_eval.h"
#include "runtime/eval/perplexity.h"
#include "runtime/eval/reference_cache.h"
#include "runtime/intonly_model.h"
#include "runtime/model.h"
#include "runtime/model_files.h"
#include "runtime/torch_bridge.h"
#include "runtime/weight_memory.h"

namespace fsq {
namespace {

// The checkpoint stays alive (and in place) as long as the model that was loaded from it.
struct Loaded {
  ModelFiles files;
  const Checkpoint& ckpt;
  std::unique_ptr<LlamaModel> model;
  ModelInfo info;
};

Loaded load_model(const std::filesystem::path& dir, const RuntimeOptions& ro) {
  auto t0 = std::chrono::steady_clock::now();
  ModelFiles files = ModelFiles::open(dir);
  auto model = files.load(ro);
  const Checkpoint* ckpt = files.checkpoint.get();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ModelInfo info;
  info.path = dir.string();
  info.weights_sha256 = ckpt->weights_sha256();
  info.architecture = ckpt->config().architecture;
  info.parameters = model->parameter_count();
  info.max_position_embeddings = ckpt->config().max_position_embeddings;
  info.load_seconds = secs;
  info.matmuls = model->matmul_kinds();
  const std::string& no_fast = model->fast_decode_unavailable();
  info.decode_path = no_fast.empty() ? "fast path (batches of 1 to 8 sequences, no per-op dispatch)" : "aten: " + no_fast;
  if (const auto [int8, all] = model->int8_decode_linears(); no_fast.empty() && int8 > 0)
    info.decode_path += ", int8 activations in " + std::to_string(int8) + " of " + std::to_string(all) + " linears";
  if (const auto [int8, all] = model->int8_prefill_linears(); int8 > 0)
    info.prefill_path = "int8 activations in " + std::to_string(int8) + " of " + std::to_string(all) + " linears";
  if (model->integer_only()) {
    info.integer_ops = model->intonly_stack().integer_ops();
    info.float_ops = IntonlyStack::float_ops();
  }
  return Loaded{std::move(files), *ckpt, std::move(model), std::move(info)};
}

LogitsFn logits_of(const LlamaModel& m) {
  return [&m](const at::Tensor& ids) { return m.forward(ids); };
}

// Both models must read the same ids: identical tokenizer files, or (e.g. a re-exported
// tokenizer) an identical vocabulary size and identical ids for this very data set.
std::string check_same_tokenizer(const Tokenizer& mine, const std::filesystem::path& ref_dir,
                                 const std::string& text, const std::vector<int32_t>& ids) {
  auto theirs = load_tokenizer(ref_dir);
  if (theirs->sha256() == mine.sha256()) return "identical tokenizer file";
  if (theirs->vocab_size() == mine.vocab_size() && theirs->bos_id() == mine.bos_id() &&
      theirs->add_bos() == mine.add_bos() && theirs->encode(text) == ids)
    return "different file, identical vocabulary size and encoding of the data";
  throw Error(ref_dir.string(), "--compare needs a reference model with the same tokenizer",
              "tokenizer sha256 " + mine.sha256() + " (vocab " + std::to_string(mine.vocab_size()) + ")",
              theirs->sha256() + " (vocab " + std::to_string(theirs->vocab_size()) + ")");
}

// With a decoder factory, the model's windows run on it (decoder_eval.h).
void run_perplexity(const EvalConfig& cfg, const Loaded& m, const RuntimeOptions& ro, const DecoderFactory* decoder,
                    EvalReport& rep) {
  if (!cfg.data_path) throw Error("--data", "a data file is required unless --speed-only");
  const std::filesystem::path& data = *cfg.data_path;
  std::string text = read_text_file(data);
  auto tok = load_tokenizer(cfg.model_dir);
  if (tok->vocab_size() > m.ckpt.config().vocab_size)
    throw Error(cfg.model_dir.string(), "tokenizer vocabulary exceeds the model's vocab_size",
                "<= " + std::to_string(m.ckpt.config().vocab_size), std::to_string(tok->vocab_size()));
  std::vector<int32_t> ids = tok->encode(text);
  rep.tokenizer_sha256 = tok->sha256();
  rep.tokenizer_kind = tok->kind();
  rep.dataset = DatasetInfo{data.string(), sha256_file(data), static_cast<int64_t>(text.size()),
                            static_cast<int64_t>(ids.size())};

  WindowOptions wo;
  wo.protocol = cfg.protocol;
  wo.seq_len = resolve_seq_len(cfg.seq_len, m.ckpt.config().max_position_embeddings);
  wo.bos_id = tok->bos_id();
  wo.add_bos = tok->add_bos();
  wo.max_windows = cfg.max_windows;
  wo.source = data.string();
  WindowPlan plan = make_windows(ids, wo);

  std::optional<Loaded> ref;
  std::string tokenizer_match;
  if (cfg.compare_dir) {
    ref.emplace(load_model(*cfg.compare_dir, ro));
    if (ref->ckpt.config().vocab_size != m.ckpt.config().vocab_size)
      throw Error(cfg.compare_dir->string(), "reference vocab_size differs from the model's",
                  std::to_string(m.ckpt.config().vocab_size), std::to_string(ref->ckpt.config().vocab_size));
    tokenizer_match = check_same_tokenizer(*tok, *cfg.compare_dir, text, ids);
  }

  EvalRunOptions ro_eval;
  ro_eval.device = ro.device;
  ro_eval.progress = cfg.progress;
  ro_eval.allow_nonfinite = cfg.allow_nonfinite;
  ro_eval.batch_size = cfg.batch_size > 0 ? cfg.batch_size
                                          : auto_batch_size(plan.seq_len, m.ckpt.config().vocab_size,
                                                            m.ckpt.config().num_heads, ref.has_value());
  const int64_t vocab = m.ckpt.config().vocab_size;
  LogitsFn mine = decoder ? decoder_logits((*decoder)(ro_eval.batch_size, plan.seq_len), ro_eval.batch_size,
                                           plan.seq_len, vocab)
                          : logits_of(*m.model);
  LogitsFn theirs = ref ? logits_of(*ref->model) : LogitsFn{};
  std::optional<ReferenceCache> cache;
  RefRowsFn ref_rows;
  if (ref) {
    ref_rows = reference_rows(theirs, plan);
    if (cfg.reference_cache_dir) {
      ReferenceCacheKey key{ref->info.weights_sha256, scalar_type_name(ro.compute_dtype), ro.device.str(),
                            cfg.fsq_build};
      cache.emplace(*cfg.reference_cache_dir, reference_cache_key(key, plan, vocab), plan.scored_tokens(), vocab);
      ref_rows = cached_reference_rows(*cache, std::move(ref_rows), plan.windows.front().scored());
    }
  }
  EvalResult res = run_eval_rows(mine, ref ? &ref_rows : nullptr, plan, ro_eval);
  ReferenceCacheTrim trimmed;
  if (cache) {
    if (cache->hit()) touch(cache->path());
    cache->commit();
    trimmed = trim_reference_cache(*cfg.reference_cache_dir, cfg.reference_cache_max_bytes, cache->path());
  }

  PerplexityInfo p;
  p.protocol = protocol_name(plan.protocol);
  p.seq_len = plan.seq_len;
  p.stride = plan.stride;
  p.bos_policy = plan.bos_policy;
  p.windows = res.windows;
  p.total_windows = plan.total_windows;
  p.scored_tokens = res.model.tokens;
  p.batch_size = ro_eval.batch_size;
  p.nll_sum = res.model.nll_sum;
  p.mean_nll = res.model.mean_nll();
  p.ppl = res.model.ppl();
  p.seconds = res.seconds;
  rep.perplexity = p;
  if (ref) {
    CompareInfo c;
    c.reference = ref->info;
    c.tokenizer_match = tokenizer_match;
    if (cache) {
      c.reference_cache = cache->path().string();
      c.reference_cache_hit = cache->hit();
      c.reference_cache_trimmed_files = trimmed.files;
      c.reference_cache_trimmed_bytes = trimmed.bytes;
    }
    c.mean_kl = res.compare->mean_kl();
    c.p99_kl = percentile(res.compare->kl, 99.0);
    c.max_kl = percentile(res.compare->kl, 100.0);
    c.top1_agreement = res.compare->top1_agreement();
    c.ref_ppl = res.ref->ppl();
    c.ref_mean_nll = res.ref->mean_nll();
    c.ppl_delta = p.ppl - c.ref_ppl;
    rep.compare = c;
  }
}

// Positions the run needs a decoder to hold: the perplexity window, the speed run's prompt
// and steps.
int64_t decoder_capacity(const EvalConfig& cfg, int64_t max_positions) {
  int64_t capacity = 1;
  if (cfg.perplexity) capacity = std::max(capacity, resolve_seq_len(cfg.seq_len, max_positions));
  if (cfg.speed) capacity = std::max(capacity, std::min(max_positions, cfg.speed_options.decode_prompt +
                                                                           cfg.speed_options.decode_steps));
  return capacity;
}

}  // namespace

EvalReport evaluate(const EvalConfig& cfg) {
  c10::InferenceMode no_autograd;  // evaluation never needs gradients
  const RuntimeOptions& ro = cfg.runtime;

  EvalReport rep;
  rep.fsq_version = cfg.fsq_version;
  rep.device = ro.device.str();
  rep.dtype = scalar_type_name(ro.compute_dtype);
  rep.threads = cfg.threads;
  rep.thread_waits = cfg.thread_waits;
  if (cfg.perplexity && cfg.data_path) check_text_file(*cfg.data_path);  // fail before loading

  std::optional<Loaded> loaded(load_model(cfg.model_dir, ro));
  RuntimeOptions run_options = ro;
  // The model's own layers unless fsq's CUDA decoder was asked for (the capacity, which checks
  // --seq-len, is only worked out then; run_perplexity checks it otherwise).
  const DecoderChoice choice =
      cfg.device.cuda_decoder
          ? choose_decoder(*loaded->model, cfg.device,
                           decoder_capacity(cfg, loaded->ckpt.config().max_position_embeddings))
          : DecoderChoice{};
  const DecoderFactory& decoder = choice.cuda;
  if (decoder) {
    rep.device = "cuda (fsq's CUDA decoder: " + cuda::describe() + ")";
    loaded->info.decode_path = "fsq's CUDA decoder: one CUDA graph per step, f16 values between the ops";
    loaded->info.prefill_path = "token by token on fsq's CUDA decoder (perplexity windows too)";
  } else if (choice.reload_on) {
    run_options.device = *choice.reload_on;
    rep.device = run_options.device.str();
    loaded.reset();
    loaded.emplace(load_model(cfg.model_dir, run_options));
  }
  const Loaded& m = *loaded;
  rep.model = m.info;
  rep.weight_memory_bytes = weight_memory_mapped_bytes();
  rep.huge_pages = transparent_huge_pages_mode();
  if (cfg.perplexity) run_perplexity(cfg, m, run_options, decoder ? &decoder : nullptr, rep);
  if (cfg.speed && m.model->integer_only())
    rep.speed_skipped = "the integer-only path evaluates whole windows without a KV cache, so decode speed is not "
                        "measured on it (the same checkpoint's w8a8static float path is what a decoder would run)";
  else if (cfg.speed && decoder)
    rep.speed = measure_decoder_speed(decoder, m.ckpt.config().vocab_size, m.ckpt.config().max_position_embeddings,
                                      cfg.speed_options);
  else if (cfg.speed)
    rep.speed = measure_speed(*m.model, cfg.speed_options);
  rep.peak_rss_bytes = peak_rss_bytes();
  return rep;
}

}  // namespace fsq
