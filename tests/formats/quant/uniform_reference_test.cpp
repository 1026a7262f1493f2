// The scalar reference quantizer: tiny groups worked out by hand, then quantization error
// by bit class on Gaussian weights (the limits are the measured values with margin).
#include "formats/quant/uniform_reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "common/error.h"
#include "common/half.h"
#include "formats/quant/quant_types.h"

namespace fsq {
namespace {

std::vector<float> dequantize(const QuantizedMatrix& m) {
  std::vector<float> out(static_cast<size_t>(m.rows * m.cols));
  dequantize_uniform(m, out.data());
  return out;
}

TEST(UniformReference, AsymmetricByHandUsesTheFp16RoundedScale) {
  // 4-bit asym, one row as one group. lo = -0.2, hi = 0.8: range 1.0, qmax 15.
  // scale = fp16(1/15): 1/15 = 2^-4 * 1.0667; mantissa 0.0667 * 1024 = 68.3 -> 68,
  // so bits 0x2C00 (2^-4) + 68 = 0x2C44, value 0.0625 * (1 + 68/1024) = 0.066650390625.
  // zero = nearbyint(0.2 / 0.06665) = nearbyint(3.0007) = 3.
  // codes: -0.2/s = -3.0007 -> -3 + 3 = 0;  0 -> 3;  0.3/s = 4.5011 -> 5 + 3 = 8;
  //        0.8/s = 12.003 -> 12 + 3 = 15.
  // With the unrounded 1/15 the third code would be nearbyint(4.5) + 3 = 7: this example
  // fails if the scale is rounded to fp16 after the codes are computed.
  const std::vector<float> w = {-0.2f, 0.0f, 0.3f, 0.8f};
  const QuantizedMatrix m = quantize_uniform(w.data(), 1, 4, {4, 0, false});
  EXPECT_EQ(m.scales, std::vector<uint16_t>{0x2C44});
  EXPECT_EQ(m.zeros, std::vector<uint8_t>{3});
  EXPECT_EQ(m.codes, (std::vector<uint8_t>{0, 3, 8, 15}));
  const float s = 0.066650390625f;
  EXPECT_EQ(dequantize(m), (std::vector<float>{-3 * s, 0.0f, 5 * s, 12 * s}));
}

TEST(UniformReference, AsymmetricRoundsHalfToEven) {
  // 2-bit asym: lo = -0.5, hi = 1.0, scale = 1.5 / 3 = 0.5 (exact in fp16: 0x3800),
  // zero = nearbyint(1.0) = 1. 0.25 / 0.5 = 0.5 exactly -> 0 (half to even) -> code 1.
  const std::vector<float> w = {-0.5f, 0.0f, 0.25f, 1.0f};
  const QuantizedMatrix m = quantize_uniform(w.data(), 1, 4, {2, 0, false});
  EXPECT_EQ(m.scales, std::vector<uint16_t>{0x3800});
  EXPECT_EQ(m.zeros, std::vector<uint8_t>{1});
  EXPECT_EQ(m.codes, (std::vector<uint8_t>{0, 1, 1, 3}));
  EXPECT_EQ(dequantize(m), (std::vector<float>{-0.5f, 0.0f, 0.0f, 1.0f}));
}

TEST(UniformReference, SymmetricByHand) {
  // 4-bit sym: max|w| = 0.7, qmax 7, scale = fp16(0.1): 0.1 = 2^-4 * 1.6, mantissa
  // 0.6 * 1024 = 614.4 -> 614 = 0x266, bits 0x2C00 + 0x266 = 0x2E66, value 0.0999755859375.
  // w/s = -7.0017, 1.0002, 3.5009, 5.0012 -> -7, 1, 4, 5 -> + 8 = 1, 9, 12, 13. No zeros stored.
  const std::vector<float> w = {-0.7f, 0.1f, 0.35f, 0.5f};
  const QuantizedMatrix m = quantize_uniform(w.data(), 1, 4, {4, 0, true});
  EXPECT_EQ(m.scales, std::vector<uint16_t>{0x2E66});
  EXPECT_TRUE(m.zeros.empty());
  EXPECT_EQ(m.codes, (std::vector<uint8_t>{1, 9, 12, 13}));
  const float s = 0.0999755859375f;
  EXPECT_EQ(dequantize(m), (std::vector<float>{-7 * s, 1 * s, 4 * s, 5 * s}));
}

TEST(UniformReference, GroupsAreIndependent) {
  // Two groups of 32 in one row: the second is the first times 4, so its scale is 4x
  // (a power of two: exact in fp16) and its codes and zero are the same.
  std::vector<float> w(64);
  for (int i = 0; i < 32; ++i) {
    w[i] = 0.01f * static_cast<float>(i * i % 17) - 0.05f;
    w[32 + i] = 4.0f * w[i];
  }
  const QuantizedMatrix m = quantize_uniform(w.data(), 1, 64, {3, 32, false});
  ASSERT_EQ(m.scales.size(), 2u);
  EXPECT_EQ(f16_to_f32(m.scales[1]), 4.0f * f16_to_f32(m.scales[0]));
  EXPECT_EQ(m.zeros[0], m.zeros[1]);
  EXPECT_TRUE(std::equal(m.codes.begin(), m.codes.begin() + 32, m.codes.begin() + 32));
}

TEST(UniformReference, ZeroGroupUsesTheRangeFloorAndStaysExact) {
  // An all-zero group: the 1e-5 floor keeps the scale positive and zero is exact.
  const std::vector<float> w(32, 0.0f);
  for (bool sym : {false, true}) {
    const QuantizedMatrix m = quantize_uniform(w.data(), 1, 32, {4, 32, sym});
    EXPECT_GT(f16_to_f32(m.scales[0]), 0.0f);
    EXPECT_EQ(dequantize(m), w);
  }
}

TEST(UniformReference, OneSidedGroupKeepsZeroInTheRange) {
  // The asymmetric range is [min(w, 0), max(w, 0)]: a group entirely above 0 gets zero point
  // 0 and is not clipped. range 0.6 -> scale fp16(0.6 / 15) = 1.2802734375 * 2^-5
  // = 0.0400085449; codes nearbyint(0.5 / s) = 12 (12.497), nearbyint(0.6 / s) = 15 (14.997).
  const std::vector<float> w = {0.5f, 0.6f};
  const QuantizedMatrix m = quantize_uniform(w.data(), 1, 2, {4, 0, false});
  EXPECT_EQ(m.zeros, std::vector<uint8_t>{0});
  EXPECT_EQ(m.codes, (std::vector<uint8_t>{12, 15}));
  std::vector<float> out(2);
  dequantize_uniform(m, out.data());
  const float scale = 1.2802734375f / 32.0f;
  EXPECT_EQ(out[0], 12 * scale);
  EXPECT_EQ(out[1], 15 * scale);
}

TEST(UniformReference, RejectsBadInput) {
  const std::vector<float> w(48, 0.5f);
  EXPECT_THROW(quantize_uniform(w.data(), 1, 48, {4, 32, false}), Error);  // 48 % 32 != 0
  EXPECT_THROW(quantize_uniform(w.data(), 1, 48, {5, 0, false}), Error);   // 5 bits
  EXPECT_THROW(quantize_uniform(w.data(), 0, 48, {4, 0, false}), Error);   // empty
  std::vector<float> nan = w;
  nan[7] = std::nanf("");
  EXPECT_THROW(quantize_uniform(nan.data(), 1, 48, {4, 0, false}), Error);
  const std::vector<float> huge = {-1e5f, 1e5f};  // range / 3 overflows fp16 (max 65504)
  EXPECT_THROW(quantize_uniform(huge.data(), 1, 2, {2, 0, false}), Error);

  QuantizedMatrix m = quantize_uniform(w.data(), 1, 48, {4, 0, false});
  std::vector<float> out(48);
  m.codes[3] = 16;  // above 4 bits
  EXPECT_THROW(dequantize_uniform(m, out.data()), Error);
  m.codes[3] = 0;
  m.zeros.clear();  // asym needs its zeros
  EXPECT_THROW(dequantize_uniform(m, out.data()), Error);
}

// Normalized MSE limits, sum (w - w')^2 / sum w^2, on N(0, 1) weights [64, 1024], seed 7.
// Measured worst per class (grouped = worst of g32/g64/g128, always g128):
//   bits  grouped asym  grouped sym  per-channel asym  per-channel sym
//   2     0.258         0.600        0.397             0.762
//   3     0.0474        0.0775       0.0751            0.115
//   4     0.0103        0.0143       0.0164            0.0209
//   8     3.6e-05       4.3e-05      5.7e-05           6.4e-05
// (8-bit g128 asym matches theory: a 128-sample range of ~5.2 sigma, step 5.2/255,
// step^2/12 = 3.5e-05.) Limits are those plus 20%, so a rounding or range bug shows up.
struct NmseLimits {
  double grouped_asym, grouped_sym, per_channel_asym, per_channel_sym;
  double of(const UniformQuant& q) const {
    if (q.group_size == 0) return q.symmetric ? per_channel_sym : per_channel_asym;
    return q.symmetric ? grouped_sym : grouped_asym;
  }
};
const std::map<int, NmseLimits> kMaxNmseByBits = {
    {2, {0.31, 0.72, 0.48, 0.92}},
    {3, {0.057, 0.093, 0.090, 0.138}},
    {4, {0.0124, 0.0172, 0.0197, 0.0251}},
    {8, {4.3e-05, 5.2e-05, 6.8e-05, 7.7e-05}},
};

TEST(UniformReference, ErrorByBitClassOnGaussianWeights) {
  constexpr int64_t kRows = 64, kCols = 1024;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(kRows * kCols));
  for (float& v : w) v = normal(rng);
  double energy = 0;
  for (float v : w) energy += static_cast<double>(v) * v;

  for (const UniformQuantType& t : uniform_quant_types()) {
    SCOPED_TRACE(std::string(t.name));
    const UniformQuant& q = t.quant;
    const QuantizedMatrix m = quantize_uniform(w.data(), kRows, kCols, q);
    const std::vector<float> back = dequantize(m);
    const int max_code = (1 << q.bits) - 1;
    const int64_t group = q.group_cols(kCols), groups = m.groups();
    double err = 0;
    for (int64_t i = 0; i < kRows * kCols; ++i) {
      ASSERT_LE(m.codes[i], max_code);
      const int64_t slot = (i / kCols) * groups + (i % kCols) / group;
      const double scale = f16_to_f32(m.scales[slot]);
      const int zero = q.symmetric ? 1 << (q.bits - 1) : m.zeros[slot];
      ASSERT_LE(zero, max_code);
      // Inside the representable range [(0 - zero) * s, (max_code - zero) * s] the error
      // is at most half a step (plus float32 rounding of w / s).
      const double d = std::fabs(static_cast<double>(w[i]) - back[i]);
      const bool inside = w[i] >= (0 - zero) * scale && w[i] <= (max_code - zero) * scale;
      if (inside) {
        ASSERT_LE(d, scale * (0.5 + 1e-6)) << "weight " << i;
      }
      err += d * d;
    }
    const double nmse = err / energy;
    EXPECT_LE(nmse, kMaxNmseByBits.at(q.bits).of(q));
    RecordProperty(std::string("nmse_") + std::string(t.name), std::to_string(nmse));
  }
}

TEST(UniformReference, MoreBitsNeverHurtOnTheSameGrid) {
  // Same group size and symmetry: each extra bit class must lower the error.
  constexpr int64_t kRows = 8, kCols = 256;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<float> w(static_cast<size_t>(kRows * kCols));
  for (float& v : w) v = normal(rng);
  for (bool sym : {false, true}) {
    double previous = INFINITY;
    for (int bits : {2, 3, 4, 8}) {
      const QuantizedMatrix m = quantize_uniform(w.data(), kRows, kCols, {bits, 64, sym});
      const std::vector<float> back = dequantize(m);
      double err = 0;
      for (size_t i = 0; i < w.size(); ++i) err += (w[i] - back[i]) * (w[i] - back[i]);
      EXPECT_LT(err, previous) << bits << " bits, sym " << sym;
      previous = err;
    }
  }
}

}  // namespace
}  // namespace fsq
