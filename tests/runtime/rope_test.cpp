// RoPE tables: plain frequencies, and llama3 scaling's three bands.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "common/error.h"
#include "runtime/model.h"
#include "temp_dir.h"
#include "tiny_model.h"

namespace fsq {
namespace {

constexpr double kAngleTolerance = 1e-9;

// Angle of pair i at position p recovered from the tables (atan2 of sin/cos).
double angle(const RopeTables& t, int64_t p, int64_t i) {
  return std::atan2(t.sin[p][i].item<double>(), t.cos[p][i].item<double>());
}

TEST(Rope, UnscaledAnglesArePositionTimesInverseFrequency) {
  ModelConfig c;
  c.head_dim = 8;
  c.rope_theta = 10000.0;
  auto t = make_rope_tables(c, 4, at::kDouble, c10::Device(c10::kCPU));
  ASSERT_EQ(t.cos.sizes(), (std::vector<int64_t>{4, 8}));
  for (int64_t i = 0; i < 4; ++i) {
    double expected = std::remainder(3.0 * std::pow(10000.0, -2.0 * i / 8), 2 * std::numbers::pi);
    EXPECT_NEAR(angle(t, 3, i), expected, kAngleTolerance);
    EXPECT_NEAR(angle(t, 3, i + 4), expected, kAngleTolerance);  // rotate_half duplicates the half
  }
}

TEST(Rope, Llama3ScalingKeepsHighFrequenciesAndDividesLowOnes) {
  // Llama-3.1 style: factor 8, low 1, high 4, original context 8192, head_dim 128.
  ModelConfig c;
  c.head_dim = 128;
  c.rope_theta = 500000.0;
  c.rope_scaling = RopeScaling{"llama3", 8.0, 1.0, 4.0, 8192};
  auto scaled = make_rope_tables(c, 2, at::kDouble, c10::Device(c10::kCPU));
  ModelConfig plain = c;
  plain.rope_scaling.reset();
  auto base = make_rope_tables(plain, 2, at::kDouble, c10::Device(c10::kCPU));
  // Pair 0: wavelength 2*pi < 8192/4 -> unchanged. Pair 63: wavelength far above 8192 -> / 8.
  EXPECT_NEAR(angle(scaled, 1, 0), angle(base, 1, 0), kAngleTolerance);
  EXPECT_NEAR(angle(scaled, 1, 63), angle(base, 1, 63) / 8.0, kAngleTolerance);
  // Medium band: strictly between the two.
  for (int64_t i = 0; i < 64; ++i) {
    double inv = std::pow(500000.0, -2.0 * i / 128), wavelen = 2 * std::numbers::pi / inv;
    if (wavelen > 8192.0 / 4 && wavelen < 8192.0) {
      double a = angle(scaled, 1, i);
      EXPECT_LT(a, inv);
      EXPECT_GT(a, inv / 8.0);
    }
  }
}

TEST(Rope, UnknownScalingTypeIsAnError) {
  ModelConfig c;
  c.head_dim = 8;
  c.rope_scaling = RopeScaling{"yarn", 4.0};
  EXPECT_THROW(make_rope_tables(c, 4, at::kFloat, c10::Device(c10::kCPU)), Error);
}

TEST(Rope, GrownTablesKeepEveryEarlierValueBitForBit) {
  ModelConfig c;
  c.head_dim = 16;
  c.max_position_embeddings = 1 << 20;
  RotaryCache cache(c, at::kFloat, c10::Device(c10::kCPU));
  EXPECT_EQ(cache.positions(), 0);
  const RopeTables small = cache.tables(3);
  EXPECT_EQ(cache.positions(), 3);
  const RopeTables grown = cache.tables(5);
  EXPECT_EQ(cache.positions(), 6);  // at least doubled, so growing one step at a time stays cheap
  EXPECT_TRUE(at::equal(grown.cos.narrow(0, 0, 3), small.cos));
  EXPECT_TRUE(at::equal(grown.sin.narrow(0, 0, 3), small.sin));
  // Built in one go or grown in steps (across the 1024-row chunks): the same bits.
  const RopeTables large = cache.tables(3000);
  const RopeTables direct = make_rope_tables(c, 3000, at::kFloat, c10::Device(c10::kCPU));
  EXPECT_TRUE(at::equal(large.cos.narrow(0, 0, 3000), direct.cos));
  EXPECT_TRUE(at::equal(large.sin.narrow(0, 0, 3000), direct.sin));
}

TEST(Rope, TablesNeverExceedMaxPositions) {
  ModelConfig c;
  c.head_dim = 8;
  c.max_position_embeddings = 10;
  RotaryCache cache(c, at::kFloat, c10::Device(c10::kCPU));
  cache.tables(6);
  cache.tables(7);  // doubling would give 12
  EXPECT_EQ(cache.positions(), 10);
  try {
    cache.tables(11);
    FAIL() << "positions beyond max_position_embeddings were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_position_embeddings"), std::string::npos) << e.what();
  }
}

// A config claiming 10^12 positions used to allocate the table at load (a raw allocator
// error naming no file); the tables now cover the positions a forward uses.
TEST(Rope, HugeMaxPositionsCostOnlyThePositionsUsed) {
  testing::TempDir dir("fsq-rope-test");
  testing::TinyModelSpec spec;
  spec.max_positions = 1'000'000'000'000;
  testing::write_tiny_model(dir.path(), spec);
  auto model = LlamaModel::load(Checkpoint::open(dir.path()), RuntimeOptions{});
  EXPECT_EQ(model->rope_positions(), 0);
  const at::Tensor logits = model->forward(at::arange(7, at::kLong).view({1, 7}));
  EXPECT_EQ(model->rope_positions(), 7);
  EXPECT_TRUE(logits.isfinite().all().item<bool>());
}

}  // namespace
}  // namespace fsq
