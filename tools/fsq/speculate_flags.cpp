#include "speculate_flags.h"

#include "common/error.h"
#include "runtime/speculative/draft_model_proposer.h"
#include "runtime/speculative/qspec_proposer.h"

namespace fsq::cli {

void add_speculate_flags(CLI::App* app, SpeculateFlags& f) {
  app->add_option("--speculate", f.mode,
                  "speculative decoding, the model verifying a draft's tokens in one pass (greedy acceptance: "
                  "the same output as plain decode): draft (--draft MODEL proposes, as llama-speculative), bild "
                  "(Big Little Decoder: --draft is the small model, e.g. a 2-4 bit copy; --alpha-fb, --alpha-rb, "
                  "--window), qspec (the model's own weights as a W4A4 draft)")
      ->check(CLI::IsMember({"draft", "bild", "qspec"}));
  app->add_option("--draft", f.draft, "draft model (checkpoint folder, fsq packed folder or .gguf) with the model's "
                                      "tokenizer, for --speculate draft|bild")
      ->check(CLI::ExistingPath);
  app->add_option("--gamma", f.gamma, "draft tokens per verify pass (draft, qspec)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, speculative::kMaxDraft));
  app->add_option("--window", f.window, "bild: the most tokens the small model runs before the model verifies")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, speculative::kMaxDraft));
  app->add_option("--alpha-fb", f.alpha_fb,
                  "bild: fallback threshold: the small model stops proposing when its top probability is below it")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app->add_option("--alpha-rb", f.alpha_rb,
                  "bild: rollback threshold: a small-model token is kept when it is the model's argmax or the "
                  "model's -log p of it is at most this (0: exactly the model's greedy output)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
}

void check_speculate_flags(const CLI::App* app, const SpeculateFlags& f) {
  const bool bild = f.mode == "bild";
  for (const char* opt : {"--draft", "--gamma", "--window", "--alpha-fb", "--alpha-rb"})
    if (app->count(opt) && f.mode.empty()) throw Error(opt, "needs --speculate");
  if ((f.mode == "draft" || bild) && f.draft.empty()) throw Error("--draft", "required by --speculate " + f.mode);
  if (f.mode == "qspec" && app->count("--draft"))
    throw Error("--draft", "--speculate qspec drafts with the model's own weights; it takes no --draft");
  if (!bild)
    for (const char* opt : {"--window", "--alpha-fb", "--alpha-rb"})
      if (app->count(opt)) throw Error(opt, "only for --speculate bild");
  if (bild && app->count("--gamma")) throw Error("--gamma", "bild's draft length is --window");
}

speculative::SpeculativeOptions speculative_options(const SpeculateFlags& f, int64_t max_new_tokens,
                                                    int64_t stop_token) {
  speculative::SpeculativeOptions so;
  so.max_new_tokens = max_new_tokens;
  so.stop_token = stop_token;
  so.gamma = f.mode == "bild" ? f.window : f.gamma;
  so.alpha_rb = f.mode == "bild" ? f.alpha_rb : 0.0;
  return so;
}

DraftSource make_draft_source(const SpeculateFlags& f, const LlamaModel& target, const Tokenizer& target_tokenizer,
                              const RuntimeOptions& ro, int64_t capacity) {
  DraftSource s;
  if (f.mode == "qspec") {  // the model itself, its linears on 4-bit activations while drafting
    s.proposer = std::make_unique<speculative::QSpecProposer>();
    return s;
  }
  s.files = std::make_unique<ModelFiles>(ModelFiles::open(f.draft));
  const int64_t vocab = s.files->config().vocab_size, want = target.config().vocab_size;
  if (vocab != want)
    throw Error("--draft", "the draft's vocabulary differs from the model's", std::to_string(want) + " tokens",
                std::to_string(vocab));
  const auto tok = load_tokenizer(f.draft);
  if (tok->vocab_size() != target_tokenizer.vocab_size() || tok->bos_id() != target_tokenizer.bos_id() ||
      tok->eos_id() != target_tokenizer.eos_id())
    throw Error("--draft", "the draft's tokenizer differs from the model's (vocabulary size, BOS or EOS id)");
  for (const char* probe : {"The quick brown fox jumps over the lazy dog.", "def f(x):\n    return x * 2  # 3.14"})
    if (tok->encode_default(probe) != target_tokenizer.encode_default(probe))
      throw Error("--draft", "the draft's tokenizer encodes text differently from the model's");
  s.model = s.files->load(ro);
  speculative::DraftOptions d;
  d.name = f.mode;
  d.alpha_fb = f.mode == "bild" ? f.alpha_fb : 0.0;
  s.proposer = std::make_unique<speculative::DraftModelProposer>(*s.model, capacity, d);
  return s;
}

}  // namespace fsq::cli
