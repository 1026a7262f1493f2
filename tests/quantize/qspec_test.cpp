// QSpec (issue 59): the draft mode switch on one loaded packed model (runtime/activation_mode.h)
// and the QSpec proposer in the speculative loop: greedy QSpec output equals plain greedy
// decoding of the same W4 model, token for token (tiny model; SmolLM2 rotated W4 g32, 256
// tokens from 5 prompts, when it is cached).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstring>

#include "formats/hf_writer.h"
#include "formats/tokenizer.h"
#include "pipeline_fixture.h"
#include "quantize/rotation/rotate_model.h"
#include "runtime/activation_mode.h"
#include "runtime/generate.h"
#include "runtime/model_files.h"
#include "runtime/speculative/qspec_proposer.h"
#include "runtime/speculative/speculative_decode.h"
#include "runtime/threads.h"

namespace fsq {
namespace {

using test::Fixture;

// One decode step's logits at the cache end, in the calling thread's activation mode; the
// cache length is put back.
std::vector<float> step_logits(const LlamaModel& model, KVCache& cache, int64_t id) {
  std::vector<float> out(static_cast<size_t>(model.config().vocab_size));
  EXPECT_TRUE(model.forward_positions(&id, 1, cache, out.data()));
  cache.length -= 1;
  return out;
}

RuntimeOptions verifier_options(bool int8_decode) {
  RuntimeOptions o;
  o.int8_decode_activations = int8_decode;
  return o;
}

TEST(QSpec, DraftModeChangesOnlyTheCallsInsideItsScope) {
  set_threads(1);
  Fixture fx("qspec-mode");
  test::lines_of(fx.config("w4"));
  const ModelFiles files = ModelFiles::open(fx.dir / "w4");
  const auto model = files.load(verifier_options(false));
  // q/k/v and gate/up of each of the 3 layers read the (rotated) residual through a norm.
  EXPECT_EQ(speculative::mark_qspec_draft_linears(*model), 5 * model->config().num_layers);
  KVCache cache = model->new_cache(1, 16);
  const std::vector<int64_t> prompt = {1, 5, 9, 200};
  std::vector<float> sink(static_cast<size_t>(4 * model->config().vocab_size));
  ASSERT_TRUE(model->forward_positions(prompt.data(), 4, cache, sink.data()));
  const std::vector<float> before = step_logits(*model, cache, 17);
  std::vector<float> draft;
  {
    const ScopedDecodeActivations int4(DecodeActivations::Int4PerToken);
    EXPECT_EQ(decode_activations(), DecodeActivations::Int4PerToken);
    draft = step_logits(*model, cache, 17);
  }
  EXPECT_EQ(decode_activations(), DecodeActivations::AsSet);
  const std::vector<float> after = step_logits(*model, cache, 17);
  EXPECT_EQ(std::memcmp(before.data(), after.data(), before.size() * sizeof(float)), 0);
  EXPECT_NE(std::memcmp(before.data(), draft.data(), before.size() * sizeof(float)), 0)
      << "4-bit activations must change the logits";
  for (float v : draft) ASSERT_TRUE(std::isfinite(v));
}

void expect_qspec_equals_greedy(const LlamaModel& model, const std::vector<std::vector<int32_t>>& prompts,
                                int64_t new_tokens, speculative::SpeculativeStats* total) {
  for (const std::vector<int32_t>& prompt : prompts) {
    GenerateOptions g;
    g.max_new_tokens = new_tokens;
    const std::vector<int32_t> plain = generate_greedy(model, prompt, g);
    speculative::QSpecProposer qspec;
    speculative::SpeculativeOptions s;
    s.max_new_tokens = new_tokens;
    s.gamma = 4;
    speculative::SpeculativeStats stats;
    const std::vector<int32_t> spec = speculative::generate_speculative(model, qspec, prompt, s, &stats);
    EXPECT_EQ(spec, plain);
    EXPECT_EQ(stats.verify_path, "fast decode rows");
    EXPECT_GT(stats.proposed, 0);
    total->generated += stats.generated;
    total->proposed += stats.proposed;
    total->accepted += stats.accepted;
    total->verify_steps += stats.verify_steps;
  }
}

TEST(QSpec, GreedyOutputEqualsPlainGreedyTinyModel) {
  set_threads(1);
  Fixture fx("qspec-tiny");
  test::lines_of(fx.config("w4"));
  const ModelFiles files = ModelFiles::open(fx.dir / "w4");
  for (bool int8 : {false, true}) {
    const auto model = files.load(verifier_options(int8));
    speculative::SpeculativeStats total;
    expect_qspec_equals_greedy(*model, {{1, 5, 9}, {3, 100, 7, 42, 8}}, 48, &total);
  }
}

// SmolLM2 rotated (fsq convert --rotate hadamard), W4 g32 symmetric RTN, verifier W4A16 (f32
// activations): 256 greedy tokens from each of 5 prompts.
TEST(QSpec, GreedyOutputEqualsPlainGreedySmolLM2Rotated) {
  FSQ_REQUIRE_SMOLLM2_HF();
  set_threads(2);
  const testing::TempDir dir("fsq-qspec-smollm2");
  {
    const Checkpoint src = Checkpoint::open(testing::smollm2_hf());
    HfWriteOptions w;
    w.dtype = DType::F32;
    write_hf_checkpoint(rotate_checkpoint(src, RotateOptions{}), dir / "rotated", w);
  }
  QuantizeConfig c;
  c.model = dir / "rotated";
  c.out = dir / "w4";
  c.method = "rtn";
  c.quant = UniformQuant{4, 32, true};
  test::lines_of(c);
  const ModelFiles files = ModelFiles::open(dir / "w4");
  const auto model = files.load(verifier_options(false));
  const auto tok = load_tokenizer(testing::smollm2_hf());
  std::vector<std::vector<int32_t>> prompts;
  for (const char* text : {"Once upon a time", "The capital of France is", "def fibonacci(n):",
                           "In 1969, the first humans", "The best way to learn a language is"}) {
    const std::vector<int32_t> ids = tok->encode(text);
    prompts.emplace_back(ids.begin(), ids.end());
  }
  speculative::SpeculativeStats total;
  expect_qspec_equals_greedy(*model, prompts, 256, &total);
  RecordProperty("acceptance_rate", std::to_string(total.acceptance_rate()));
  // Tokens per verify pass: each prompt's first token comes from the prefill, not a pass.
  const double per_step = static_cast<double>(total.generated - static_cast<int64_t>(prompts.size())) /
                          static_cast<double>(total.verify_steps);
  RecordProperty("tokens_per_verify_step", std::to_string(per_step));
}

}  // namespace
}  // namespace fsq
