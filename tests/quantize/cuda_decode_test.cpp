// The CUDA decoders (runtime/cuda/decode_model.h) on a packed tiny model (RTN W4 g32, 8-bit
// embedding and head). Everywhere: the reference decoder, the host spec of the device step
// with f16/bf16 values between its ops, against the CPU runtime's exact f32 decode over a
// generation. On a GPU: the device decoder against the reference decoder, with and without
// the CUDA graph.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "common/error.h"
#include "logit_nmse.h"
#include "pipeline_fixture.h"
#include "runtime/cuda/cuda_backend.h"
#include "runtime/cuda_decode_spec.h"
#include "runtime/eval/decoder_eval.h"
#include "runtime/generate.h"
#include "runtime/model_files.h"
#include "runtime/threads.h"

namespace fsq {
namespace {

using cuda::ActType;
using test::Fixture;
using test::kF16LogitNmse;
using test::logit_nmse_bound;
using test::nmse;

constexpr int64_t kBatch = 2, kCudaSteps = 24;

class CudaDecode : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fx_ = new Fixture("cudadec");
    QuantizeConfig cfg = fx_->config("w4");
    cfg.quant = UniformQuant{4, 32, false};
    test::lines_of(cfg);
    RuntimeOptions exact;
    exact.int8_decode_activations = false;  // the f32 kernels: the spec's arithmetic
    model_ = ModelFiles::open(fx_->dir / "w4").load(exact).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    delete fx_;
  }
  static Fixture* fx_;
  static LlamaModel* model_;
};
Fixture* CudaDecode::fx_ = nullptr;
LlamaModel* CudaDecode::model_ = nullptr;

// Greedy decoding from token 1 in every sequence, one token per step from position 0:
// `decoder`'s logits against the CPU runtime's at every step; returns the worst NMSE.
double worst_nmse_against_cpu(const LlamaModel& model, cuda::Decoder& decoder) {
  const int64_t vocab = model.config().vocab_size;
  KVCache cache = model.new_cache(kBatch, kCudaSteps);
  std::vector<int32_t> ids = {1, 7};
  std::vector<float> got(kBatch * vocab);
  double worst = 0;
  for (int64_t t = 0; t < kCudaSteps; ++t) {
    at::Tensor step_ids = at::empty({kBatch, 1}, at::kLong);
    for (int64_t b = 0; b < kBatch; ++b) step_ids[b][0] = ids[b];
    const at::Tensor want = model.forward(step_ids, &cache).reshape({kBatch, vocab}).contiguous();
    EXPECT_EQ(decoder.step(ids.data(), t, got.data()), "");
    worst = std::max(worst, nmse(got.data(), want.data_ptr<float>(), kBatch * vocab));
    const at::Tensor next = want.argmax(-1);
    for (int64_t b = 0; b < kBatch; ++b) ids[b] = static_cast<int32_t>(next[b].item<int64_t>());
  }
  return worst;
}

TEST_F(CudaDecode, ReferenceDecoderFollowsTheCpuRuntimeOverAGeneration) {
  set_threads(2);
  CudaDecodeSpec spec;
  ASSERT_EQ(make_cuda_decode_spec(*model_, kCudaSteps, &spec), "");
  ASSERT_EQ(cuda::decode_spec_problem(spec.spec, kBatch, kCudaSteps), "");
  for (ActType act : {ActType::F16, ActType::BF16}) {
    cuda::ReferenceDecoder reference(spec.spec, kBatch, kCudaSteps, act);
    const double worst = worst_nmse_against_cpu(*model_, reference);
    std::printf("reference decoder (%s) vs CPU f32: worst logit NMSE %.3g over %ld steps\n", cuda::act_type_name(act),
                worst, static_cast<long>(kCudaSteps));
    EXPECT_LE(worst, logit_nmse_bound(act)) << cuda::act_type_name(act);
  }
}

// SqueezeLLM checkpoints: LUT-4 and LUT-3 linears with a CSR part (5 % outliers here, so the
// 64- and 96-wide rows of the tiny model hold some), the embedding and head 8-bit uniform.
TEST_F(CudaDecode, ReferenceDecoderFollowsTheCpuRuntimeOnLutCheckpoints) {
  set_threads(2);
  for (int bits : {4, 3}) {
    QuantizeConfig cfg = fx_->config("lut" + std::to_string(bits), "squeezellm");
    cfg.quant.bits = bits;
    cfg.lut.weighted = false;  // no Fisher pass, so no calibration text
    cfg.lut.sensitive_pct = 0.0;
    cfg.lut.outlier_pct = 5.0;
    test::lines_of(cfg);
    RuntimeOptions exact;
    exact.int8_decode_activations = false;
    const auto model = ModelFiles::open(cfg.out).load(exact);
    CudaDecodeSpec spec;
    ASSERT_EQ(make_cuda_decode_spec(*model, kCudaSteps, &spec), "");
    ASSERT_EQ(spec.spec.layers[0].down.kind, cuda::DecodeLinear::Kind::Lut);
    EXPECT_GT(spec.spec.layers[0].down.lut.nnz, 0) << "the CSR part is exercised";
    cuda::ReferenceDecoder reference(spec.spec, kBatch, kCudaSteps, ActType::F16);
    const double worst = worst_nmse_against_cpu(*model, reference);
    std::printf("reference decoder (f16) vs CPU f32, squeezellm lut%d: worst logit NMSE %.3g over %ld steps\n", bits,
                worst, static_cast<long>(kCudaSteps));
    EXPECT_LE(worst, kF16LogitNmse) << "lut" << bits;
  }
}

TEST_F(CudaDecode, DecodersRefuseWhatTheyCannotRun) {
  CudaDecodeSpec spec;
  ASSERT_EQ(make_cuda_decode_spec(*model_, kCudaSteps, &spec), "");
  EXPECT_NE(cuda::decode_spec_problem(spec.spec, cuda::kMaxGemvBatch + 1, kCudaSteps).find("batch"), std::string::npos);
  EXPECT_NE(cuda::decode_spec_problem(spec.spec, 1, kCudaSteps + 1).find("rotary"), std::string::npos);
  cuda::DecodeModelSpec wrong = spec.spec;
  wrong.layers[1].o.uniform.cols -= 32;
  EXPECT_NE(cuda::decode_spec_problem(wrong, 1, kCudaSteps).find("layer 1 o_proj"), std::string::npos);
  cuda::ReferenceDecoder reference(spec.spec, 1, kCudaSteps, ActType::F16);
  std::vector<float> logits(model_->config().vocab_size);
  const int32_t bad_id = static_cast<int32_t>(model_->config().vocab_size), good_id = 3;
  EXPECT_NE(reference.step(&bad_id, 0, logits.data()).find("vocabulary"), std::string::npos);
  EXPECT_NE(reference.step(&good_id, kCudaSteps, logits.data()).find("outside the cache"), std::string::npos);
  // A model loaded in bf16 compute.
  RuntimeOptions bf16;
  bf16.compute_dtype = at::kBFloat16;
  const std::unique_ptr<LlamaModel> narrow = ModelFiles::open(fx_->model).load(bf16);
  CudaDecodeSpec narrow_spec;
  EXPECT_NE(make_cuda_decode_spec(*narrow, kCudaSteps, &narrow_spec).find("f32 compute"), std::string::npos);
}

// The f32 source model: its linears, embedding and head rounded to fp16 at upload.
TEST_F(CudaDecode, ReferenceDecoderFollowsTheCpuRuntimeOnTheDenseModel) {
  set_threads(2);
  const std::unique_ptr<LlamaModel> dense = ModelFiles::open(fx_->model).load(RuntimeOptions{});
  CudaDecodeSpec spec;
  ASSERT_EQ(make_cuda_decode_spec(*dense, kCudaSteps, &spec), "");
  EXPECT_EQ(spec.spec.embedding.kind, cuda::DecodeLinear::Kind::Half);
  EXPECT_EQ(spec.spec.layers[2].gate.kind, cuda::DecodeLinear::Kind::Half);
  cuda::ReferenceDecoder reference(spec.spec, kBatch, kCudaSteps, ActType::F16);
  const double worst = worst_nmse_against_cpu(*dense, reference);
  std::printf("reference decoder (f16 weights and values) vs CPU f32, dense model: worst logit NMSE %.3g\n", worst);
  EXPECT_LE(worst, kF16LogitNmse);
}

TEST_F(CudaDecode, GreedyGenerationOnADecoderFeedsThePromptThenItsArgmaxTokens) {
  const int64_t vocab = model_->config().vocab_size;
  const std::vector<int32_t> prompt = {1, 30, 400};
  CudaDecodeSpec spec;
  ASSERT_EQ(make_cuda_decode_spec(*model_, kCudaSteps, &spec), "");
  cuda::ReferenceDecoder decoder(spec.spec, 1, kCudaSteps, ActType::F16);
  GenerateOptions opts;
  opts.max_new_tokens = 5;
  std::vector<float> prompt_logits;
  opts.prompt_logits = &prompt_logits;
  std::vector<int32_t> seen;
  const std::vector<int32_t> out =
      generate_greedy_steps(decoder, vocab, kCudaSteps, prompt, opts, [&](int32_t id) { seen.push_back(id); });
  // The same steps by hand on a fresh decoder: the prompt at positions 0..2, then each new
  // token, the argmax of the step before, at the next position.
  cuda::ReferenceDecoder by_hand(spec.spec, 1, kCudaSteps, ActType::F16);
  std::vector<int32_t> want = prompt;
  std::vector<float> logits(vocab), want_prompt_logits;
  for (int64_t pos = 0; pos < static_cast<int64_t>(want.size()) && static_cast<int64_t>(want.size()) < 8; ++pos) {
    ASSERT_EQ(by_hand.step(&want[pos], pos, logits.data()), "");
    if (pos < 3) want_prompt_logits.insert(want_prompt_logits.end(), logits.begin(), logits.end());
    if (pos >= 2) want.push_back(static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin()));
  }
  EXPECT_EQ(out, want);
  EXPECT_EQ(seen, std::vector<int32_t>(want.begin() + 3, want.end()));
  EXPECT_EQ(prompt_logits, want_prompt_logits);
  opts.max_new_tokens = kCudaSteps;  // 3 + kCudaSteps positions: more than the decoder holds
  EXPECT_THROW(generate_greedy_steps(decoder, vocab, kCudaSteps, prompt, opts), Error);
}

// fsq eval's adapter (runtime/eval/decoder_eval.h) on the reference decoder: whole windows
// token by token against the CPU runtime's window logits, a short batch padded; decode speed.
TEST_F(CudaDecode, EvalRunsWindowsAndDecodeSpeedOnADecoder) {
  set_threads(2);
  const int64_t vocab = model_->config().vocab_size, window = 20, batch = 3;
  CudaDecodeSpec spec;
  ASSERT_EQ(make_cuda_decode_spec(*model_, kCudaSteps, &spec), "");
  const DecoderFactory make = [&spec](int64_t b, int64_t positions) {
    return std::unique_ptr<cuda::Decoder>(std::make_unique<cuda::ReferenceDecoder>(spec.spec, b, positions, ActType::F16));
  };
  const LogitsFn logits = decoder_logits(make(batch, window), batch, window, vocab);
  at::manual_seed(9);
  const at::Tensor ids = at::randint(0, vocab, {2, window}, at::kLong);  // 2 of the decoder's 3 rows
  const at::Tensor got = logits(ids), want = model_->forward(ids).contiguous();
  ASSERT_EQ(got.sizes(), want.sizes());
  for (int64_t b = 0; b < 2; ++b)
    EXPECT_LE(nmse(got[b].contiguous().data_ptr<float>(), want[b].data_ptr<float>(), window * vocab), kF16LogitNmse)
        << "window " << b;
  EXPECT_THROW(logits(at::zeros({4, window}, at::kLong)), Error);  // more rows than the decoder has

  SpeedOptions opts;
  opts.decode_batches = {1, 2};
  opts.decode_prompt = 3;
  opts.decode_steps = 4;
  opts.min_seconds = 0;
  opts.max_reps = 1;
  const SpeedResult speed = measure_decoder_speed(make, vocab, kCudaSteps, opts);
  EXPECT_TRUE(speed.prefill.empty());
  ASSERT_EQ(speed.decode.size(), 2u);
  for (const DecodeSpeed& d : speed.decode) {
    EXPECT_EQ(d.steps, 4);
    EXPECT_GT(d.tokens_per_s(), 0.0);
  }
  EXPECT_EQ(speed.decode[1].batch, 2);
}

TEST_F(CudaDecode, DeviceDecoderMatchesTheReferenceDecoder) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no GPU: " << cuda::describe();
  CudaDecodeSpec spec;
  ASSERT_EQ(make_cuda_decode_spec(*model_, kCudaSteps, &spec), "");
  const int64_t vocab = model_->config().vocab_size;
  for (ActType act : {ActType::F16, ActType::BF16}) {
    cuda::ReferenceDecoder reference(spec.spec, kBatch, kCudaSteps, act);
    std::unique_ptr<cuda::Decoder> graph, direct;
    ASSERT_EQ(cuda::make_device_decoder(spec.spec, kBatch, kCudaSteps, act, true, &graph), "");
    ASSERT_EQ(cuda::make_device_decoder(spec.spec, kBatch, kCudaSteps, act, false, &direct), "");
    std::vector<int32_t> ids = {1, 7};
    std::vector<float> want(kBatch * vocab), got(kBatch * vocab), got_direct(kBatch * vocab);
    double worst = 0;
    for (int64_t t = 0; t < kCudaSteps; ++t) {
      ASSERT_EQ(reference.step(ids.data(), t, want.data()), "");
      ASSERT_EQ(graph->step(ids.data(), t, got.data()), "") << "step " << t;
      ASSERT_EQ(direct->step(ids.data(), t, got_direct.data()), "") << "step " << t;
      EXPECT_EQ(got, got_direct) << "the graph replays the same launches, step " << t;
      for (float v : got) ASSERT_TRUE(std::isfinite(v));
      worst = std::max(worst, nmse(got.data(), want.data(), kBatch * vocab));
      for (int64_t b = 0; b < kBatch; ++b)
        ids[b] = static_cast<int32_t>(std::max_element(want.begin() + b * vocab, want.begin() + (b + 1) * vocab) -
                                      (want.begin() + b * vocab));
    }
    std::printf("device decoder (%s) vs reference decoder: worst logit NMSE %.3g over %ld steps\n",
                cuda::act_type_name(act), worst, static_cast<long>(kCudaSteps));
    EXPECT_LE(worst, logit_nmse_bound(act)) << cuda::act_type_name(act);
  }
}

}  // namespace
}  // namespace fsq
