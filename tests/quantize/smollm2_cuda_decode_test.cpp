// The CUDA decoder's spec (runtime/cuda_decode_spec.h, runtime/cuda/decode_model.h) on the real
// model: SmolLM2-135M quantized RTN W4 g128 (g64 on the 576-wide linears) with its tied 8-bit
// embedding/head, decoded by the reference decoder (f16 values between the ops) beside the CPU
// runtime's exact f32 decode. Measured here: worst logit NMSE 4.1e-5 over 5 steps, the same
// argmax at every step; about 0.4 s per reference step (double sums, on purpose).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "fixtures.h"
#include "logit_nmse.h"
#include "quantize/quantize_model.h"
#include "runtime/cuda_decode_spec.h"
#include "runtime/model_files.h"
#include "runtime/threads.h"
#include "temp_dir.h"

namespace fsq {
namespace {

constexpr int64_t kSmolLM2CudaSteps = 5;

TEST(SmolLM2CudaDecode, ReferenceDecoderFollowsTheCpuRuntime) {
  FSQ_REQUIRE_FIXTURE(testing::smollm2_hf(), testing::kHowToFetchSmolLM2);
  set_threads(2);
  const testing::TempDir dir("fsq-smollm2-cuda-decode");
  QuantizeConfig cfg;
  cfg.model = testing::smollm2_hf();
  cfg.out = dir / "w4";
  cfg.method = "rtn";
  cfg.quant = UniformQuant{4, 128, false};
  run_quantize(cfg, [](const std::string&) {});
  RuntimeOptions exact;
  exact.int8_decode_activations = false;
  const auto model = ModelFiles::open(cfg.out).load(exact);
  CudaDecodeSpec spec;
  ASSERT_EQ(make_cuda_decode_spec(*model, kSmolLM2CudaSteps, &spec), "");
  EXPECT_EQ(spec.spec.head.data(), spec.spec.embedding.data()) << "SmolLM2's head is its embedding";
  cuda::ReferenceDecoder reference(spec.spec, 1, kSmolLM2CudaSteps, cuda::ActType::F16);
  KVCache cache = model->new_cache(1, kSmolLM2CudaSteps);
  const int64_t vocab = model->config().vocab_size;
  std::vector<float> got(vocab);
  int32_t id = 1;  // BOS
  double worst = 0;
  for (int64_t t = 0; t < kSmolLM2CudaSteps; ++t) {
    const at::Tensor want = model->forward(at::full({1, 1}, int64_t{id}, at::kLong), &cache).reshape({vocab});
    ASSERT_EQ(reference.step(&id, t, got.data()), "");
    worst = std::max(worst, test::nmse(got.data(), want.contiguous().data_ptr<float>(), vocab));
    const auto next = want.argmax().item<int64_t>();
    EXPECT_EQ(std::max_element(got.begin(), got.end()) - got.begin(), next) << "step " << t;
    id = static_cast<int32_t>(next);
  }
  std::printf("SmolLM2-135M w4g128 reference decoder (f16) vs CPU f32: worst logit NMSE %.3g over %ld steps\n", worst,
              static_cast<long>(kSmolLM2CudaSteps));
  EXPECT_LE(worst, test::kF16LogitNmse);
}

}  // namespace
}  // namespace fsq
