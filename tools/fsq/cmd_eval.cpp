// fsq eval: perplexity (per protocol), comparison against a reference model, speed.
#include <cstdio>
#include <optional>

#include "build_info.h"
#include "common/error.h"
#include "common/sha256.h"
#include "options.h"
#include "provenance.h"
#include "wait_policy.h"
#include "runtime/eval/evaluate.h"
#include "runtime/speculative/speculative_speed.h"
#include "speculate_flags.h"

namespace fsq::cli {
namespace {

struct EvalFlags {
  std::string model, data, compare, reference_cache, json, protocol = "gptq", progress = "auto";
  std::string intonly_inputs = "token";
  int64_t seq_len = 0, max_windows = 0, batch_size = 0;
  std::vector<int64_t> speed_prefill = SpeedOptions{}.prefill_lengths, speed_batches = SpeedOptions{}.decode_batches;
  int64_t speed_steps = SpeedOptions{}.decode_steps;
  double reference_cache_max_gib = 16.0;
  bool no_speed = false, speed_only = false, force = false, allow_nonfinite = false;
  RuntimeFlags rt;
  SpeculateFlags spec;
  std::string spec_prompt = "Once upon a time";
  int spec_reps = 3;
};

// --speculate: plain and speculative decode of --prompt, --decode-steps new tokens, timed
// alternately (runtime/speculative/speculative_speed.h); printed and returned for the JSON.
nlohmann::json speculative_speed(const EvalFlags& f, const RuntimeOptions& ro) {
  const ModelFiles files = ModelFiles::open(f.model);
  const auto model = files.load(ro);
  const auto tok = load_tokenizer(f.model);
  const std::vector<int32_t> prompt = tok->encode_default(f.spec_prompt);
  if (prompt.empty()) throw Error("--prompt", "encodes to no tokens and the tokenizer adds no BOS");
  const int64_t capacity = static_cast<int64_t>(prompt.size()) + f.speed_steps;
  DraftSource draft = make_draft_source(f.spec, *model, *tok, ro, capacity);
  const speculative::SpeculativeOptions so = speculative_options(f.spec, f.speed_steps, -1);
  const speculative::SpeculativeSpeed r =
      speculative::measure_speculative_speed(*model, *draft.proposer, prompt, so, f.spec_reps);
  const speculative::SpeculativeStats& st = r.stats;
  std::printf("speculative decode (%s, %lld drafts per pass, batch 1, %lld new tokens, median of %d): %.2f tok/s vs "
              "plain %.2f tok/s (%.2fx); acceptance %.3f, %.2f tokens per verify step, draft %.3f s / verify %.3f s "
              "per run; output %s plain greedy; verify pass: %s\n",
              draft.proposer->describe().c_str(), static_cast<long long>(so.gamma), static_cast<long long>(r.new_tokens),
              r.reps, r.tokens_per_s, r.plain_tokens_per_s,
              r.plain_tokens_per_s > 0 ? r.tokens_per_s / r.plain_tokens_per_s : 0.0, st.acceptance_rate(),
              st.tokens_per_step(), st.draft_seconds, st.verify_seconds, r.same_output ? "equals" : "DIFFERS FROM",
              st.verify_path.c_str());
  return {{"proposer", draft.proposer->describe()}, {"gamma", so.gamma}, {"alpha_rb", so.alpha_rb},
          {"prompt_tokens", r.prompt_tokens}, {"new_tokens", r.new_tokens}, {"reps", r.reps},
          {"decode_tokens_per_s", r.tokens_per_s}, {"plain_decode_tokens_per_s", r.plain_tokens_per_s},
          {"acceptance_rate", st.acceptance_rate()}, {"tokens_per_verify_step", st.tokens_per_step()},
          {"proposed", st.proposed}, {"accepted", st.accepted}, {"verify_steps", st.verify_steps},
          {"draft_seconds", st.draft_seconds}, {"verify_seconds", st.verify_seconds},
          {"same_output_as_plain", r.same_output}, {"verify_path", st.verify_path}};
}

int run_eval(CLI::App* app, const EvalFlags& f) {
  check_output_file(f.json, "--json", {f.model, f.data, f.compare}, f.force);
  check_speculate_flags(app, f.spec);
  if (!f.spec.mode.empty() && !f.speed_only) throw Error("--speculate", "only with --speed-only");
  for (const char* opt : {"--prompt", "--speculate-reps"})
    if (app->count(opt) && f.spec.mode.empty()) throw Error(opt, "needs --speculate");
  EvalConfig cfg;
  cfg.model_dir = f.model;
  if (!f.data.empty()) cfg.data_path = f.data;
  if (!f.compare.empty()) cfg.compare_dir = f.compare;
  if (app->count("--reference-cache-max-gib") && f.reference_cache.empty())
    throw Error("--reference-cache-max-gib", "needs --reference-cache (the folder it limits)");
  if (!f.reference_cache.empty()) {
    if (f.compare.empty()) throw Error("--reference-cache", "needs --compare (it keeps the reference model's logits)");
    cfg.reference_cache_dir = f.reference_cache;
    // The binary's own hash: any rebuild (an uncommitted edit included) gets new cache keys.
    cfg.fsq_build = version() + " " + sha256_file("/proc/self/exe");
    cfg.reference_cache_max_bytes = static_cast<uint64_t>(f.reference_cache_max_gib * double(uint64_t{1} << 30));
  }
  cfg.protocol = parse_protocol(f.protocol);
  if (app->count("--seq-len")) cfg.seq_len = f.seq_len;
  cfg.max_windows = f.max_windows;
  cfg.batch_size = f.batch_size;
  // --device cuda: the model loads on the CPU and runs on fsq's CUDA decoder where that can
  // (evaluate() says so in the report, or falls back to LibTorch's CUDA, or fails saying why).
  cfg.runtime = runtime_options(f.rt, &cfg.device);
  cfg.runtime.allow_nonfinite_weights = f.allow_nonfinite;
  cfg.runtime.intonly_token_inputs = f.intonly_inputs == "token";
  cfg.perplexity = !f.speed_only;
  cfg.speed = !f.no_speed;
  cfg.speed_options.prefill_lengths = f.speed_prefill;
  cfg.speed_options.decode_batches = f.speed_batches;
  cfg.speed_options.decode_steps = f.speed_steps;
  cfg.allow_nonfinite = f.allow_nonfinite;
  cfg.progress = apply_progress(f.progress);
  cfg.threads = apply_threads(f.rt.threads);
  cfg.thread_waits = thread_wait_settings();
  cfg.fsq_version = version();
  if (cfg.perplexity && !cfg.data_path) throw Error("--data", "required (or pass --speed-only)");

  EvalReport report = evaluate(cfg);
  std::fputs(report_text(report).c_str(), stdout);
  std::fflush(stdout);
  nlohmann::json json = report_json(report);
  if (!f.spec.mode.empty()) json["speculative"] = speculative_speed(f, cfg.runtime);
  if (!f.json.empty()) write_json_report(f.json, json);
  return 0;
}

}  // namespace

Command add_eval_command(CLI::App& root) {
  auto f = std::make_shared<EvalFlags>();
  CLI::App* app = root.add_subcommand(
      "eval",
      "Evaluate a model: perplexity on a text file under a stated protocol, optionally KL "
      "divergence and top-1 agreement against a reference model, and prefill/decode speed.");
  app->add_option("--model", f->model, "checkpoint directory (config.json, *.safetensors, tokenizer) or .gguf file")
      ->required()
      ->check(CLI::ExistingPath);
  app->add_option("--data", f->data, "UTF-8 text file, tokenized whole")->check(CLI::ExistingFile);
  app->add_option("--protocol", f->protocol,
                  "gptq (non-overlapping windows), llama.cpp (llama-perplexity), bos-window "
                  "(BOS + seq_len-1 tokens per window)")
      ->capture_default_str()
      ->check(CLI::IsMember(protocol_names()));
  app->add_option("--seq-len", f->seq_len, "window length (default 2048, capped at the model's maximum)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 30));
  app->add_option("--compare", f->compare, "reference model directory or .gguf file (same tokenizer)")
      ->check(CLI::ExistingPath);
  app->add_option("--reference-cache", f->reference_cache,
                  "folder that keeps the reference's scored logits (float32, vocab x 4 bytes per scored token) so "
                  "that comparing more checkpoints against the same reference, text and windows skips its forward; "
                  "keyed by sha256 of everything they depend on")
      ->check(CLI::ExistingDirectory);
  app->add_option("--reference-cache-max-gib", f->reference_cache_max_gib,
                  "after the run, delete the least recently used files of --reference-cache until its ref-*.f32 "
                  "files total at most this many GiB (every rebuild of fsq makes new keys; 0: no limit)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app->add_option("--max-windows", f->max_windows, "evaluate only the first K windows (0: all)")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--batch-size", f->batch_size, "windows per forward pass (0: auto, up to 8)")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--json", f->json, "also write the full report as JSON (atomically)");
  add_force_flag(app, f->force);
  app->add_flag("--allow-nonfinite", f->allow_nonfinite,
                "run a model whose weights hold NaN/Inf and report a NaN/Inf perplexity, instead of failing at the "
                "tensor or the first window that produces one");
  auto* no_speed = app->add_flag("--no-speed", f->no_speed, "skip the speed measurements");
  auto* speed_only = app->add_flag("--speed-only", f->speed_only, "only load time, speed and memory");
  no_speed->excludes(speed_only);
  // What llama-bench calls -p and -n, and the decode batch: a 7B model on 2 cores spends minutes on each
  // default measurement, so a comparison picks the ones it reports.
  app->add_option("--prefill-lengths", f->speed_prefill, "prompt lengths whose prefill is timed (as fsq profile's)")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app->add_option("--decode-batches", f->speed_batches, "batch sizes whose cached decode steps are timed")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{8}));
  app->add_option("--decode-steps", f->speed_steps, "decode steps per timed run")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  add_speculate_flags(app, f->spec);
  app->add_option("--prompt", f->spec_prompt, "with --speculate: the prompt decoded (--decode-steps new tokens)")
      ->capture_default_str();
  app->add_option("--speculate-reps", f->spec_reps, "with --speculate: timed runs of each, after a warm-up")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  add_progress_flag(app, f->progress);
  add_runtime_flags(app, f->rt);
  add_decode_flags(app, f->rt);
  app->add_option("--intonly-inputs", f->intonly_inputs,
                  "integer-only checkpoints: o_proj/down_proj inputs in int8 at a power-of-two scale per token, "
                  "chosen in integers (token), or at I-BERT's static per-tensor scales (static)")
      ->capture_default_str()
      ->check(CLI::IsMember({"token", "static"}));
  app->footer(examples({
      "fsq eval --model models/stories260K --data tinystories_val.txt --protocol bos-window --seq-len 256",
      "fsq eval --model quant/ --compare models/base --data wiki.test.raw --json report.json",
      "fsq eval --model q4/ --compare models/base --data wiki.test.raw --reference-cache /tmp/refrows",
      "fsq eval --model models/stories260K --speed-only",
      "fsq eval --model f32/ --speed-only --decode-batches 1 --speculate draft --draft w4/ --decode-steps 256",
      "fsq eval --model llama-7b-w4g32 --speed-only --prefill-lengths 512 --decode-batches 1 --threads 2",
      "fsq eval --model DIR --data wiki.test.raw --protocol llama.cpp --seq-len 512 --no-speed"}));
  return Command{app, [app, f] { return run_eval(app, *f); }};
}

}  // namespace fsq::cli
