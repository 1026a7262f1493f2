// --speculate and its options (fsq generate): which draft source proposes tokens for the
// model to verify (runtime/speculative/), and building it.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <string>

#include "formats/tokenizer.h"
#include "runtime/model.h"
#include "runtime/model_files.h"
#include "runtime/speculative/proposer.h"
#include "runtime/speculative/speculative_decode.h"

namespace fsq::cli {

struct SpeculateFlags {
  std::string mode;   // "" (plain decode), draft, bild, qspec
  std::string draft;  // --draft: the draft (draft) or small (bild) model
  int64_t gamma = 4;  // --gamma: draft tokens per verify pass
  int64_t window = 7; // --window: BiLD's cap on the small model's run
  double alpha_fb = 0.5, alpha_rb = 0.0;
};

void add_speculate_flags(CLI::App* app, SpeculateFlags& flags);
// Bad combinations fail before any model loads (one line naming the option).
void check_speculate_flags(const CLI::App* app, const SpeculateFlags& flags);

// The loop's options from the flags (gamma or, for bild, the window; alpha_rb for bild).
speculative::SpeculativeOptions speculative_options(const SpeculateFlags& flags, int64_t max_new_tokens,
                                                    int64_t stop_token);

// What a proposer needs kept alive beside it (the draft model and its files).
struct DraftSource {
  std::unique_ptr<ModelFiles> files;
  std::unique_ptr<LlamaModel> model;
  std::unique_ptr<speculative::Proposer> proposer;
};

// Loads --draft with `ro` and checks that it shares the target's vocabulary and tokenizer
// (fsq::Error "--draft: ..." otherwise); capacity: prompt + new tokens.
DraftSource make_draft_source(const SpeculateFlags& flags, const LlamaModel& target, const Tokenizer& target_tokenizer,
                              const RuntimeOptions& ro, int64_t capacity);

}  // namespace fsq::cli
