// fsq generate: greedy continuation of a prompt, a quick check that a model works.
#include <c10/core/InferenceMode.h>

#include <chrono>
#include <cstdio>

#include "common/error.h"
#include "formats/checkpoint.h"
#include "formats/safetensors.h"
#include "formats/tokenizer.h"
#include "options.h"
#include "provenance.h"
#include "speculate_flags.h"
#include "runtime/decoder_choice.h"
#include "runtime/generate.h"
#include "runtime/model_files.h"
#include "runtime/torch_bridge.h"

namespace fsq::cli {
namespace {

struct GenerateFlags {
  std::string model, prompt;
  int64_t n = 32;
  bool ids = false;
  std::string logits, json;
  bool force = false, stats = false, score = false;
  RuntimeFlags rt;
  SpeculateFlags spec;
};

// Decode time: from the first new token (the prefill's) to the last, so tokens/s counts the
// tokens after the first; the same for plain and speculative decoding.
struct DecodeClock {
  using Clock = std::chrono::steady_clock;
  Clock::time_point first, last;
  int64_t tokens = 0;
  void tick() {
    last = Clock::now();
    if (tokens++ == 0) first = last;
  }
  double seconds() const { return std::chrono::duration<double>(last - first).count(); }
  double tokens_per_s() const { return tokens > 1 && seconds() > 0 ? double(tokens - 1) / seconds() : 0.0; }
};

std::string ids_text(const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]";
}

int run_generate(const CLI::App* app, const GenerateFlags& f) {
  // Bad options fail before the model loads.
  if (!f.logits.empty() && f.n < 1)
    throw Error("--logits", "the prompt's logits come from the first generation step: give -n >= 1");
  check_output_file(f.logits, "--logits", {f.model}, f.force);
  check_output_file(f.json, "--json", {f.model}, f.force);
  check_speculate_flags(app, f.spec);
  if (f.score && f.spec.mode.empty()) throw Error("--score", "needs --speculate");
  if (!f.spec.mode.empty() && !f.logits.empty())
    throw Error("--logits", "not with --speculate (the prompt's logits come from plain decoding)");
  apply_threads(f.rt.threads);
  c10::InferenceMode no_autograd;
  // --device cuda: the model loads on the CPU, and where fsq's CUDA decoder runs it (packed
  // uniform or LUT checkpoints, f32 models rounded to fp16) its steps run there, f16 values
  // between the ops; other models go to LibTorch's CUDA when it has it.
  DeviceRequest device;
  RuntimeOptions ro = runtime_options(f.rt, &device);
  // Generation decodes with a KV cache, which the integer-only path does not keep: an intonly
  // checkpoint decodes on its float path (the same w8a8static linears).
  ro.integer_only = false;
  ModelFiles files = ModelFiles::open(f.model);
  if (files.packed && files.packed->has_intonly_ranges())
    std::fprintf(stderr, "fsq: note: integer-only checkpoint: generation runs its w8a8static float path (the "
                         "integer path evaluates whole windows without a KV cache; fsq eval runs it)\n");
  const Checkpoint& ckpt = *files.checkpoint;
  auto tok = load_tokenizer(f.model);
  auto model = files.load(ro);
  // The model's default tokenization: BOS first when the tokenizer's add-BOS flag is set.
  std::vector<int32_t> prompt = tok->encode_default(f.prompt);
  if (prompt.empty()) throw Error("--prompt", "encodes to no tokens and the tokenizer adds no BOS");
  const int64_t room = ckpt.config().max_position_embeddings - static_cast<int64_t>(prompt.size());
  if (f.n > room)
    throw Error("-n", "prompt + new tokens exceed the model's max_position_embeddings",
                "<= " + std::to_string(std::max<int64_t>(room, 0)), std::to_string(f.n));
  GenerateOptions go;
  go.max_new_tokens = f.n;
  go.stop_token = tok->eos_id();
  std::vector<float> prompt_logits;
  if (!f.logits.empty()) go.prompt_logits = &prompt_logits;
  const int64_t capacity = static_cast<int64_t>(prompt.size()) + f.n;
  DecodeClock clock;
  const auto tick = [&](int32_t) { clock.tick(); };
  std::vector<int32_t> out;
  nlohmann::json report = {{"mode", f.spec.mode.empty() ? "plain" : f.spec.mode}};
  if (!f.spec.mode.empty()) {
    if (device.name != "cpu")
      throw Error("--speculate", "runs on the CPU (--device cpu); fsq's CUDA decoder takes one token per step");
    DraftSource draft = make_draft_source(f.spec, *model, *tok, ro, capacity);
    speculative::SpeculativeOptions so = speculative_options(f.spec, f.n, go.stop_token);
    so.score = f.score;
    speculative::SpeculativeStats st;
    out = speculative::generate_speculative(*model, *draft.proposer, prompt, so, &st, tick);
    report["speculative"] = {{"proposer", draft.proposer->describe()},
                             {"gamma", so.gamma},
                             {"alpha_rb", so.alpha_rb},
                             {"proposed", st.proposed},
                             {"accepted", st.accepted},
                             {"verify_steps", st.verify_steps},
                             {"acceptance_rate", st.acceptance_rate()},
                             {"tokens_per_verify_step", st.tokens_per_step()},
                             {"prefill_seconds", st.prefill_seconds},
                             {"draft_seconds", st.draft_seconds},
                             {"verify_seconds", st.verify_seconds},
                             {"verify_path", st.verify_path}};
    if (f.score) {
      report["speculative"]["verifier_nll"] = st.nll;
      report["speculative"]["verifier_perplexity"] = st.perplexity();
    }
    if (f.stats)
      std::fprintf(stderr,
                   "fsq: speculate %s, %lld draft tokens per pass: acceptance %.3f (%lld of %lld), %.2f tokens per "
                   "verify step (%lld steps); draft %.3f s, verify %.3f s; verify pass: %s\n",
                   draft.proposer->describe().c_str(), static_cast<long long>(so.gamma), st.acceptance_rate(),
                   static_cast<long long>(st.accepted), static_cast<long long>(st.proposed), st.tokens_per_step(),
                   static_cast<long long>(st.verify_steps), st.draft_seconds, st.verify_seconds, st.verify_path.c_str());
    if (f.stats && f.score) std::fprintf(stderr, "fsq: perplexity of the generated tokens under the model: %.4f\n", st.perplexity());
  } else {
    const DecoderChoice choice = choose_decoder(*model, device, capacity);
    if (choice.reload_on) {
      ro.device = *choice.reload_on;
      model = files.load(ro);
    }
    out = generate_greedy(*model, choice, capacity, prompt, go, tick);
  }
  if (f.stats)
    std::fprintf(stderr, "fsq: decode: %lld tokens after the first in %.3f s: %.2f tokens/s\n",
                 static_cast<long long>(std::max<int64_t>(clock.tokens - 1, 0)), clock.seconds(), clock.tokens_per_s());
  std::printf("%s\n", tok->decode(out).c_str());
  if (f.ids) std::printf("ids: %s\n", ids_text(out).c_str());
  if (!f.logits.empty()) {
    const int64_t vocab = static_cast<int64_t>(prompt_logits.size() / prompt.size());
    write_safetensors(f.logits,
                      {{"logits", DType::F32, {static_cast<int64_t>(prompt.size()), vocab},
                        std::as_bytes(std::span<const float>(prompt_logits))},
                       {"ids", DType::I32, {static_cast<int64_t>(out.size())}, std::as_bytes(std::span<const int32_t>(out))}},
                      {{"prompt_tokens", std::to_string(prompt.size())}});
  }
  if (!f.json.empty()) {
    report["prompt_tokens"] = prompt.size();
    report["generated"] = clock.tokens;
    report["decode_seconds"] = clock.seconds();
    report["decode_tokens_per_s"] = clock.tokens_per_s();
    report["threads"] = f.rt.threads;
    report["ids"] = std::vector<int32_t>(out.begin() + static_cast<std::ptrdiff_t>(prompt.size()), out.end());
    write_json_report(f.json, report);
  }
  return 0;
}

}  // namespace

Command add_generate_command(CLI::App& root) {
  auto f = std::make_shared<GenerateFlags>();
  CLI::App* app = root.add_subcommand(
      "generate", "Greedy (argmax) generation with the KV cache: prints the prompt and its continuation.");
  app->add_option("--model", f->model, "checkpoint directory or .gguf file")->required()->check(CLI::ExistingPath);
  app->add_option("--prompt", f->prompt, "prompt text (BOS is added per the tokenizer's policy)")->required();
  app->add_option("-n,--max-new-tokens", f->n, "tokens to generate (stops early at EOS)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app->add_flag("--ids", f->ids, "also print the token ids (prompt + generated)");
  app->add_option("--logits", f->logits,
                  "also write a .safetensors file: \"logits\" F32 [prompt tokens, vocab] of every prompt position "
                  "and \"ids\" I32 (prompt + generated), to compare with another engine");
  app->add_flag("--stats", f->stats,
                 "print decode tokens/s on stderr (from the first new token to the last), and with --speculate the "
                 "acceptance rate, tokens per verify step and the draft/verify time split");
  app->add_option("--json", f->json,
                  "also write those numbers and the generated ids as JSON (atomically)");
  add_speculate_flags(app, f->spec);
  app->add_flag("--score", f->score,
                "with --speculate: also sum the model's -log p of each generated token (the text's perplexity under "
                "the model, in --json and --stats; costs a softmax per token)");
  add_force_flag(app, f->force);
  add_runtime_flags(app, f->rt);
  add_decode_flags(app, f->rt);
  app->footer(examples({"fsq generate --model models/stories260K --prompt \"Once upon a time\" -n 40",
                        "fsq generate --model DIR --prompt \"The capital of France is\" -n 16 --ids --threads 4",
                        "fsq generate --model DIR --prompt \"Hello\" -n 32 --logits hello.safetensors",
                        "fsq generate --model f32/ --prompt \"Once upon a time\" -n 256 --speculate draft --draft w4/ "
                        "--gamma 4 --stats   (the same text as without --speculate)",
                        "fsq generate --model f32/ --prompt \"Hi\" -n 128 --speculate bild --draft w3/ --alpha-fb 0.6 "
                        "--alpha-rb 2 --window 7 --json bild.json",
                        "fsq generate --model DIR --prompt \"Once upon a time\" -n 64 --device cuda   "
                        "(fsq's CUDA decoder: fsq quantize checkpoints, f32 models as fp16)"}));
  return Command{app, [app, f] { return run_generate(app, *f); }};
}

}  // namespace fsq::cli
