// The CUDA decode step (runtime/cuda/decode_model.h) on a random packed model, LibTorch-free so
// that this binary runs on GPU machines as built here: the device decoder, replaying its
// CUDA graph and launching op by op, against the reference decoder over a generation. (The
// reference decoder itself is checked against the CPU runtime in
// tests/quantize/cuda_decode_test.cpp.) Without a GPU only the reference decoder runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "logit_nmse.h"
#include "random_packed.h"
#include "rope_tables.h"
#include "runtime/cuda/cuda_backend.h"
#include "runtime/cuda/decode_model.h"

namespace fsq {
namespace {

using cuda::ActType;
using test::logit_nmse_bound;
using test::RandomUniform;

constexpr int64_t kBatch = 3, kCapacity = 40;

// A 2-layer model of random packed matrices (W4 g32 asymmetric linears, a W8 g64 symmetric
// embedding, a separate W3 g32 head), random norm gains near 1, LLaMA rotary tables. With
// Linears::UniformAndLut the second layer's linears are LUT ones instead: LUT-3 with a 1 % CSR
// part, o_proj and down_proj LUT-4 dense-only. Linears::Half: every matrix fp16.
enum class Linears { Uniform, UniformAndLut, Half };

struct RandomModel {
  static constexpr int64_t kHidden = 128, kInter = 224, kHeads = 4, kKvHeads = 2, kDim = 32, kVocab = 1000;
  std::vector<std::unique_ptr<RandomUniform>> matrices;
  std::vector<std::unique_ptr<test::RandomLut>> luts;
  std::vector<std::vector<uint16_t>> halves;
  std::vector<std::vector<float>> norms;
  std::vector<float> cos, sin;
  cuda::DecodeModelSpec spec;

  explicit RandomModel(Linears kind = Linears::Uniform) {
    const bool lut = kind == Linears::UniformAndLut, half = kind == Linears::Half;
    spec.hidden = kHidden, spec.intermediate = kInter, spec.heads = kHeads, spec.kv_heads = kKvHeads;
    spec.head_dim = kDim, spec.vocab = kVocab, spec.rms_norm_eps = 1e-5f;
    uint32_t seed = 100;
    halves.reserve(32);  // half_matrix() hands out pointers into its elements
    const auto half_matrix = [&](int64_t rows, int64_t cols) {
      std::mt19937 rng(seed++);
      std::uniform_real_distribution<float> value(-0.2f, 0.2f);
      halves.emplace_back(static_cast<size_t>(rows * cols));
      for (uint16_t& v : halves.back()) v = f32_to_f16(value(rng));
      return cuda::DecodeLinear(cuda::HalfWeightsView{halves.back().data(), rows, cols});
    };
    const auto matrix = [&](int64_t rows, int64_t cols, int bits, int64_t group, bool asym) {
      if (half) return half_matrix(rows, cols);
      matrices.push_back(std::make_unique<RandomUniform>(rows, cols, bits, group, asym, seed++));
      return cuda::DecodeLinear(matrices.back()->view);
    };
    const auto lut_matrix = [&](int64_t rows, int64_t cols, int bits, double sparse) {
      luts.push_back(std::make_unique<test::RandomLut>(rows, cols, bits, sparse, seed++));
      return cuda::DecodeLinear(luts.back()->view);
    };
    const auto norm = [&]() {
      std::mt19937 rng(seed++);
      std::uniform_real_distribution<float> gain(0.8f, 1.2f);
      norms.emplace_back(kHidden);
      for (float& g : norms.back()) g = gain(rng);
      return norms.back().data();
    };
    norms.reserve(8);  // norm() hands out pointers into it
    spec.embedding = matrix(kVocab, kHidden, 8, 64, false);
    spec.head = matrix(kVocab, kHidden, 3, 32, true);
    for (int l = 0; l < 2; ++l) {
      cuda::DecodeLayerSpec L;
      L.q = matrix(kHeads * kDim, kHidden, 4, 32, true);
      L.k = matrix(kKvHeads * kDim, kHidden, 4, 32, true);
      L.v = matrix(kKvHeads * kDim, kHidden, 4, 32, true);
      L.o = matrix(kHidden, kHeads * kDim, 4, 32, true);
      L.gate = matrix(kInter, kHidden, 4, 32, true);
      L.up = matrix(kInter, kHidden, 4, 32, true);
      L.down = matrix(kHidden, kInter, 4, 32, true);
      if (lut && l == 1) {
        L.q = lut_matrix(kHeads * kDim, kHidden, 3, 0.01);
        L.k = lut_matrix(kKvHeads * kDim, kHidden, 3, 0.01);
        L.v = lut_matrix(kKvHeads * kDim, kHidden, 3, 0.01);
        L.o = lut_matrix(kHidden, kHeads * kDim, 4, 0.0);
        L.gate = lut_matrix(kInter, kHidden, 3, 0.01);
        L.up = lut_matrix(kInter, kHidden, 3, 0.01);
        L.down = lut_matrix(kHidden, kInter, 4, 0.0);
      }
      L.input_norm = norm();
      L.post_attn_norm = norm();
      spec.layers.push_back(L);
    }
    spec.final_norm = norm();
    test::llama_rope_tables(kCapacity, kDim, cos, sin);
    spec.rope_cos = cos.data(), spec.rope_sin = sin.data(), spec.rope_positions = kCapacity;
  }
};

const char* linears_name(Linears kind) {
  return kind == Linears::Uniform ? "uniform" : kind == Linears::UniformAndLut ? "uniform_and_lut" : "fp16";
}

// The next token of each sequence: the argmax of its logits.
void greedy(const std::vector<float>& logits, std::vector<int32_t>& ids) {
  const int64_t vocab = RandomModel::kVocab;
  for (size_t b = 0; b < ids.size(); ++b) {
    const auto row = logits.begin() + static_cast<int64_t>(b) * vocab;
    ids[b] = static_cast<int32_t>(std::max_element(row, row + vocab) - row);
  }
}

TEST(CudaDecoder, ReferenceDecoderRunsTheRandomModels) {
  for (Linears kind : {Linears::Uniform, Linears::UniformAndLut, Linears::Half}) {
    const RandomModel m(kind);
    ASSERT_EQ(cuda::decode_spec_problem(m.spec, kBatch, kCapacity), "") << linears_name(kind);
    cuda::ReferenceDecoder reference(m.spec, kBatch, kCapacity, ActType::F16);
    std::vector<int32_t> ids = {0, 5, 999};
    std::vector<float> logits(kBatch * RandomModel::kVocab);
    for (int64_t t = 0; t < 4; ++t) {
      ASSERT_EQ(reference.step(ids.data(), t, logits.data()), "");
      for (float v : logits) ASSERT_TRUE(std::isfinite(v)) << linears_name(kind);
      greedy(logits, ids);
    }
    // Three sequences fed different tokens give different logits.
    EXPECT_FALSE(std::equal(logits.begin(), logits.begin() + RandomModel::kVocab, logits.begin() + RandomModel::kVocab));
  }
}

class CudaDecoderOnDevice : public ::testing::TestWithParam<Linears> {};

TEST_P(CudaDecoderOnDevice, MatchesTheReferenceDecoder) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no GPU: " << cuda::describe();
  const RandomModel m(GetParam());
  for (ActType act : {ActType::F16, ActType::BF16}) {
    cuda::ReferenceDecoder reference(m.spec, kBatch, kCapacity, act);
    std::unique_ptr<cuda::Decoder> graph, direct;
    ASSERT_EQ(cuda::make_device_decoder(m.spec, kBatch, kCapacity, act, true, &graph), "");
    ASSERT_EQ(cuda::make_device_decoder(m.spec, kBatch, kCapacity, act, false, &direct), "");
    std::vector<int32_t> ids = {0, 5, 999};
    std::vector<float> want(kBatch * RandomModel::kVocab), got(want.size()), got_direct(want.size());
    double worst = 0;
    for (int64_t t = 0; t < kCapacity; ++t) {  // every slot of the cache, the last included
      ASSERT_EQ(reference.step(ids.data(), t, want.data()), "");
      ASSERT_EQ(graph->step(ids.data(), t, got.data()), "") << "step " << t;
      ASSERT_EQ(direct->step(ids.data(), t, got_direct.data()), "") << "step " << t;
      ASSERT_EQ(got, got_direct) << "the graph replays the same launches, step " << t;
      for (float v : got) ASSERT_TRUE(std::isfinite(v)) << "step " << t;
      worst = std::max(worst, test::nmse(got.data(), want.data(), static_cast<int64_t>(want.size())));
      greedy(want, ids);
    }
    std::printf("device decoder (%s) vs reference decoder, random 2-layer %s model: worst logit NMSE %.3g over %ld "
                "steps\n",
                cuda::act_type_name(act), linears_name(GetParam()), worst, static_cast<long>(kCapacity));
    EXPECT_LE(worst, logit_nmse_bound(act)) << cuda::act_type_name(act);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, CudaDecoderOnDevice,
                         ::testing::Values(Linears::Uniform, Linears::UniformAndLut, Linears::Half),
                         [](const ::testing::TestParamInfo<Linears>& info) {
                           return std::string(linears_name(info.param));
                         });

}  // namespace
}  // namespace fsq
