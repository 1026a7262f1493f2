// The residual-stream rotation (quantize/rotation): the orthogonal matrices are orthogonal,
// deterministic per seed, and a rotated model computes the original's logits.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/error.h"
#include "fixtures.h"
#include "formats/architectures.h"
#include "formats/checkpoint.h"
#include "quantize/rotation/orthogonal.h"
#include "quantize/rotation/rotate_model.h"
#include "runtime/model.h"
#include "runtime/threads.h"
#include "temp_dir.h"
#include "tiny_model.h"

namespace fsq {
namespace {

using testing::TempDir;

// Q Q^T = I in double: Gram-Schmidt run twice and the Hadamard factors are exact up to a
// few ulps of the 1/sqrt(d) scaling per entry.
constexpr double kOrthogonalityTolerance = 1e-12;
// Rotated-model logits against the original's, relative to the largest |logit|. The exact
// function is the same; what differs is f32 rounding: each rotated weight is its exact value
// rounded once (relative 2^-24 = 6e-8) and every f32 dot product of length d rounds
// differently in the two bases (about sqrt(d) * 2^-24 relative per sum, d <= 1536 here:
// ~2.4e-6), compounding over the layers' residual adds (<= 30 layers). 1e-4 leaves a
// margin of 20 over the measured 1e-6 (stories260K) and 5e-6 (SmolLM2); a wrong sign or a
// missed fold gives O(1).
constexpr double kLogitTolerance = 1e-4;

double max_offdiag_error(const std::vector<double>& q, int64_t d) {
  double worst = 0.0;
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = 0; j < d; ++j) {
      double dot = 0.0;
      for (int64_t k = 0; k < d; ++k) dot += q[i * d + k] * q[j * d + k];
      worst = std::max(worst, std::fabs(dot - (i == j ? 1.0 : 0.0)));
    }
  return worst;
}

TEST(Rotation, PaleyMatricesAreHadamard) {
  for (int64_t q : {3, 11, 19}) {
    const int64_t n = q + 1;
    const std::vector<double> h = paley_hadamard(q);
    for (double v : h) EXPECT_TRUE(v == 1.0 || v == -1.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double dot = 0.0;
        for (int64_t k = 0; k < n; ++k) dot += h[i * n + k] * h[j * n + k];
        EXPECT_EQ(dot, i == j ? static_cast<double>(n) : 0.0) << "order " << n << " rows " << i << ", " << j;
      }
  }
  EXPECT_THROW(paley_hadamard(13), Error);  // 13 = 1 mod 4
  EXPECT_THROW(paley_hadamard(15), Error);  // not a prime
}

TEST(Rotation, MatricesAreOrthogonalAndApplyAsTheirProduct) {
  struct Case {
    int64_t d;
    RotationKind kind;
  };
  for (const Case c : {Case{64, RotationKind::Hadamard}, Case{48, RotationKind::Hadamard},
                       Case{80, RotationKind::Hadamard}, Case{576, RotationKind::Hadamard},
                       Case{40, RotationKind::Random}, Case{100, RotationKind::Random}}) {
    const Orthogonal q = Orthogonal::make(c.d, c.kind, 7, "test");
    const std::vector<double> m = q.matrix();
    EXPECT_LE(max_offdiag_error(m, c.d), kOrthogonalityTolerance) << q.describe();
    // rotate_rows is x Q and rotate_columns is Q^T x on a random matrix.
    const int64_t n = 3;
    std::vector<double> x(static_cast<size_t>(n * c.d));
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37 * static_cast<double>(i) + 1.0);
    std::vector<double> rows = x, cols(static_cast<size_t>(c.d * n));
    q.rotate_rows(rows.data(), n);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t i = 0; i < c.d; ++i) cols[i * n + r] = x[r * c.d + i];  // x^T
    q.rotate_columns(cols.data(), n);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < c.d; ++j) {
        double want = 0.0;
        for (int64_t i = 0; i < c.d; ++i) want += x[r * c.d + i] * m[i * c.d + j];
        EXPECT_NEAR(rows[r * c.d + j], want, kOrthogonalityTolerance) << q.describe();
        EXPECT_NEAR(cols[j * n + r], want, kOrthogonalityTolerance) << q.describe();
      }
  }
}

TEST(Rotation, SameSeedSameBitsOtherSeedOtherMatrix) {
  for (RotationKind kind : {RotationKind::Hadamard, RotationKind::Random}) {
    const std::vector<double> a = Orthogonal::make(96, kind, 3, "t").matrix();
    const std::vector<double> b = Orthogonal::make(96, kind, 3, "t").matrix();
    const std::vector<double> c = Orthogonal::make(96, kind, 4, "t").matrix();
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)), 0);
    EXPECT_NE(a, c);
  }
}

TEST(Rotation, HadamardOrdersAndRefusal) {
  for (int64_t d : {1, 2, 12, 64, 576, 768, 1536, 2048, 4096, 5120}) EXPECT_TRUE(Orthogonal::hadamard_order_known(d)) << d;
  for (int64_t d : {7, 100, 896, 3584}) EXPECT_FALSE(Orthogonal::hadamard_order_known(d)) << d;
  try {
    Orthogonal::make(896, RotationKind::Hadamard, 0, "model: hidden_size");
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no Hadamard matrix of order 896"), std::string::npos) << e.what();
  }
}

// max |a - b| / max |b| over logits of a few fixed token windows.
double logit_error(const Checkpoint& original, const Checkpoint& rotated, int64_t windows, int64_t tokens) {
  at::manual_seed(11);
  const at::Tensor ids = at::randint(0, original.config().vocab_size, {windows, tokens}, at::kLong);
  const at::Tensor want = LlamaModel::load(original, RuntimeOptions{})->forward(ids);
  const at::Tensor got = LlamaModel::load(rotated, RuntimeOptions{})->forward(ids);
  return (got - want).abs().max().item<double>() / want.abs().max().item<double>();
}

void expect_norms_are_ones(const Checkpoint& rotated) {
  const ModelConfig& cfg = rotated.config();
  const ArchSpec& arch = arch_spec_for(cfg.architecture);
  std::vector<std::string> norms{arch.final_norm.hf};
  for (int64_t i = 0; i < cfg.num_layers; ++i) {
    norms.push_back(layer_name(arch.input_norm.hf, i));
    norms.push_back(layer_name(arch.post_attn_norm.hf, i));
  }
  for (const std::string& n : norms) {
    const TensorView& t = rotated.get(n);
    ASSERT_EQ(t.dtype, DType::F32);
    const float* v = reinterpret_cast<const float*>(t.data);
    for (int64_t k = 0; k < t.numel(); ++k) ASSERT_EQ(v[k], 1.0f) << n << "[" << k << "]";
  }
  EXPECT_FALSE(cfg.tie_word_embeddings);
  EXPECT_NE(rotated.find(arch.lm_head.hf), nullptr);
}

void expect_bit_identical(const Checkpoint& a, const Checkpoint& b) {
  const auto ta = a.tensors(), tb = b.tensors();
  ASSERT_EQ(ta.size(), tb.size());
  for (size_t i = 0; i < ta.size(); ++i) {
    ASSERT_EQ(ta[i]->name, tb[i]->name);
    ASSERT_EQ(ta[i]->nbytes, tb[i]->nbytes);
    EXPECT_EQ(std::memcmp(ta[i]->data, tb[i]->data, ta[i]->nbytes), 0) << ta[i]->name;
  }
}

TEST(Rotation, TinyModelsKeepTheirLogits) {
  set_threads(1);
  struct Case {
    const char* arch;
    bool tied, bias;
    int64_t hidden;
    RotationKind kind;
  };
  for (const Case c : {Case{"LlamaForCausalLM", false, false, 32, RotationKind::Hadamard},
                       Case{"LlamaForCausalLM", true, true, 48, RotationKind::Hadamard},
                       Case{"Qwen2ForCausalLM", true, true, 40, RotationKind::Random},
                       Case{"MistralForCausalLM", false, false, 64, RotationKind::Random}}) {
    TempDir dir("fsq-rotation");
    testing::TinyModelSpec spec;
    spec.architecture = c.arch;
    spec.tied = c.tied;
    spec.attention_bias = c.bias;
    spec.hidden = c.hidden;
    spec.outlier_channels = 2;  // norms far from ones, so a missed fold shows
    spec.outlier_gain = 8.0f;
    testing::write_tiny_model(dir.path(), spec);
    const Checkpoint src = Checkpoint::open(dir.path());
    const RotateOptions opts{c.kind, 5};
    const Checkpoint rotated = rotate_checkpoint(src, opts);
    EXPECT_LE(logit_error(src, rotated, 2, 16), kLogitTolerance) << c.arch << " d=" << c.hidden;
    expect_norms_are_ones(rotated);
    expect_bit_identical(rotated, rotate_checkpoint(src, opts));
  }
}

TEST(Rotation, Stories260kKeepsItsLogits) {
  FSQ_REQUIRE_FIXTURE(testing::stories260k_dir() / "model.safetensors", testing::kHowToStageShared);
  set_threads(1);
  const Checkpoint src = Checkpoint::open(testing::stories260k_dir());
  const Checkpoint rotated = rotate_checkpoint(src, RotateOptions{});
  const double err = logit_error(src, rotated, 2, 64);
  EXPECT_LE(err, kLogitTolerance);
  RecordProperty("relative_logit_error", std::to_string(err));
  expect_norms_are_ones(rotated);
}

TEST(Rotation, SmolLM2KeepsItsLogits) {
  FSQ_REQUIRE_SMOLLM2_HF();
  set_threads(2);
  const Checkpoint src = Checkpoint::open(testing::smollm2_hf());
  const Checkpoint rotated = rotate_checkpoint(src, RotateOptions{});
  const double err = logit_error(src, rotated, 1, 32);
  EXPECT_LE(err, kLogitTolerance);
  RecordProperty("relative_logit_error", std::to_string(err));
  expect_norms_are_ones(rotated);
}

}  // namespace
}  // namespace fsq
