// GGUF block quantizers (formats/gguf/quantize_blocks.h): every type's blocks decode through
// the reference dequantizer to exactly the values the quantizer reports, the weighted search
// is never worse than plain rounding (llama.cpp's reference formulas, written out here from
// their definitions), and importance weights move the error to where they are small.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "common/error.h"
#include "common/half.h"
#include "formats/gguf/dequantize.h"
#include "formats/gguf/quantize_blocks.h"
#include "formats/gguf/quantize_nearest.h"

namespace fsq {
namespace {

constexpr double kNearestSlack = 1e-6;

const GgmlType kLegacyTypes[] = {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1,
                                 GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::IQ4_NL};
const GgmlType kTypes[] = {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
                           GgmlType::Q5_1, GgmlType::IQ4_NL, GgmlType::Q2_K, GgmlType::Q3_K,
                           GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

// Rows that exercise the corners: gaussian with a few large outliers, tiny magnitudes
// (fp16 subnormal scales), an all-zero block, a constant block, one-sided blocks.
std::vector<float> test_row(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = normal(rng);
  for (int64_t i = 0; i < n; i += 37) x[i] *= 12.0f;
  for (int64_t i = 32; i < 64 && i < n; ++i) x[i] = 0.0f;
  for (int64_t i = 64; i < 96 && i < n; ++i) x[i] = 0.25f;
  for (int64_t i = 96; i < 128 && i < n; ++i) x[i] = std::fabs(x[i]) + 0.1f;
  for (int64_t i = 128; i < 160 && i < n; ++i) x[i] *= 1e-5f;
  return x;
}

std::vector<float> test_importance(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::lognormal_distribution<float> lognormal(0.0f, 1.5f);
  std::vector<float> w(static_cast<size_t>(n));
  for (auto& v : w) v = lognormal(rng);
  return w;
}

struct Quantized {
  std::vector<std::byte> bytes;
  std::vector<float> reconstruction;
};

Quantized quantize(GgmlType t, const std::vector<float>& x, const std::vector<float>& importance) {
  Quantized q;
  q.bytes.resize(*ggml_nbytes(t, static_cast<int64_t>(x.size())));
  q.reconstruction.resize(x.size());
  quantize_row_gguf(t, x, importance, q.bytes, q.reconstruction);
  return q;
}

std::vector<float> decode(GgmlType t, const std::vector<std::byte>& bytes, size_t n) {
  std::vector<float> y(n);
  dequantize_row(t, bytes.data(), y.data(), static_cast<int64_t>(n));
  return y;
}

double weighted_error(const float* x, const float* y, const float* w, int n) {
  double e = 0;
  for (int i = 0; i < n; ++i) {
    double d = static_cast<double>(x[i]) - static_cast<double>(y[i]);
    e += (w != nullptr ? w[i] : 1.0) * d * d;
  }
  return e;
}

TEST(QuantizeBlocks, DecodesBitExactlyToItsReconstruction) {
  constexpr int64_t n = 32 * 40;
  for (GgmlType t : kTypes) {
    for (bool weighted : {false, true}) {
      auto x = test_row(n, 7);
      auto w = weighted ? test_importance(n, 8) : std::vector<float>{};
      Quantized q = quantize(t, x, w);
      std::vector<float> y = decode(t, q.bytes, x.size());
      ASSERT_EQ(0, std::memcmp(y.data(), q.reconstruction.data(), y.size() * sizeof(float)))
          << ggml_type_name(t) << (weighted ? " weighted" : "");
      for (int64_t i = 32; i < 64; ++i) EXPECT_EQ(y[i], 0.0f) << ggml_type_name(t) << ": a zero block stays zero";
    }
  }
}

// llama.cpp's reference (non-imatrix) rounding, from its definitions: Q8_0 d = amax/127;
// Q4_0/Q5_0 d = max/-8 (-16) where max is the signed element of largest magnitude; Q4_1/Q5_1
// d = (max - min)/15 (31), m = min; codes by rounding with the fp32 scale, stored fp16.
// IQ4_NL: d = max/-127 (the table's first level) and the nearest level, by brute force.
std::vector<float> plain_rounding(GgmlType t, const float* x) {
  std::vector<float> y(32);
  float amax = 0, max = 0, mn = x[0], mx = x[0];
  for (int i = 0; i < 32; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
    mn = std::min(mn, x[i]);
    mx = std::max(mx, x[i]);
  }
  auto h = [](float v) { return f16_to_f32(f32_to_f16(v)); };
  switch (t) {
    case GgmlType::Q8_0: {
      float d = amax / 127, id = d != 0 ? 1 / d : 0;
      for (int i = 0; i < 32; ++i) y[i] = h(d) * std::round(x[i] * id);
      return y;
    }
    case GgmlType::Q4_0:
    case GgmlType::Q5_0: {
      const float half = t == GgmlType::Q4_0 ? 8 : 16;
      float d = max / -half, id = d != 0 ? 1 / d : 0;
      for (int i = 0; i < 32; ++i) {
        float q = std::min(2 * half - 1, std::floor(x[i] * id + half + 0.5f));
        y[i] = h(d) * (q - half);
      }
      return y;
    }
    case GgmlType::IQ4_NL: {
      const float d = h(max / -127.0f);
      for (int i = 0; i < 32; ++i) {
        float best = d * static_cast<float>(iq4nl_levels()[0]);
        for (int8_t level : iq4nl_levels()) {
          float v = d * static_cast<float>(level);
          if (std::fabs(x[i] - v) < std::fabs(x[i] - best)) best = v;
        }
        y[i] = best;
      }
      return y;
    }
    default: {
      const float top = t == GgmlType::Q4_1 ? 15 : 31;
      float d = (mx - mn) / top, id = d != 0 ? 1 / d : 0;
      for (int i = 0; i < 32; ++i) {
        float q = std::min(top, std::floor((x[i] - mn) * id + 0.5f));
        y[i] = h(d) * q + h(mn);
      }
      return y;
    }
  }
}

TEST(QuantizeBlocks, NeverWorseThanPlainRoundingPerBlock) {
  constexpr int64_t n = 32 * 256;
  auto x = test_row(n, 21);
  for (bool weighted : {false, true}) {
    auto w = weighted ? test_importance(n, 22) : std::vector<float>{};
    for (GgmlType t : kLegacyTypes) {
      Quantized q = quantize(t, x, w);
      double ours_total = 0, plain_total = 0;
      for (int64_t b = 0; b < n / 32; ++b) {
        const float* xb = x.data() + b * 32;
        const float* wb = weighted ? w.data() + b * 32 : nullptr;
        auto plain = plain_rounding(t, xb);
        double ours = weighted_error(xb, q.reconstruction.data() + b * 32, wb, 32);
        double base = weighted_error(xb, plain.data(), wb, 32);
        // Our candidates include plain rounding's fp16 scale with the nearest codes for it;
        // the slack covers the float rounding of x / d when "nearest" is decided.
        ASSERT_LE(ours, base * (1 + kNearestSlack) + 1e-30) << ggml_type_name(t) << " block " << b;
        ours_total += ours;
        plain_total += base;
      }
      EXPECT_LT(ours_total, plain_total) << ggml_type_name(t) << (weighted ? " weighted" : "");
    }
  }
}

// fsq export --rounding nearest: the blocks decode to exactly the reference formulas above
// (llama-quantize's arithmetic without an imatrix), corner blocks included.
TEST(QuantizeNearest, DecodesToThePlainRoundingFormulasExactly) {
  constexpr int64_t n = 32 * 256;
  const auto x = test_row(n, 41);
  for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1}) {
    ASSERT_TRUE(can_round_nearest(t)) << ggml_type_name(t);
    std::vector<std::byte> bytes(*ggml_nbytes(t, n));
    round_row_nearest(t, x, bytes);
    const std::vector<float> y = decode(t, bytes, x.size());
    for (int64_t b = 0; b < n / 32; ++b) {
      // Compared as numbers: the formulas give -0 where a stored code 0 decodes to +0.
      const auto want = plain_rounding(t, x.data() + b * 32);
      for (int i = 0; i < 32; ++i)
        ASSERT_EQ(want[i], y[b * 32 + i]) << ggml_type_name(t) << " block " << b << " element " << i;
    }
    std::vector<std::byte> again(bytes.size());
    round_row_nearest(t, x, again);
    EXPECT_EQ(bytes, again) << ggml_type_name(t);
  }
}

TEST(QuantizeNearest, RefusesWhatItCannotRound) {
  std::vector<float> x(64, 0.5f);
  std::vector<std::byte> q4(*ggml_nbytes(GgmlType::Q4_0, 64));
  EXPECT_FALSE(can_round_nearest(GgmlType::Q4_K));
  EXPECT_FALSE(can_round_nearest(GgmlType::IQ4_NL));
  std::vector<std::byte> k(*ggml_nbytes(GgmlType::Q4_K, 256));
  std::vector<float> x256(256, 0.5f);
  EXPECT_THROW(round_row_nearest(GgmlType::Q4_K, x256, k), Error);
  EXPECT_THROW(round_row_nearest(GgmlType::Q4_0, std::span<const float>(x.data(), 48), q4), Error);
  EXPECT_THROW(round_row_nearest(GgmlType::Q4_0, x, std::span<std::byte>(q4.data(), q4.size() - 1)), Error);
  x[40] = std::nanf("");
  EXPECT_THROW(round_row_nearest(GgmlType::Q4_0, x, q4), Error);
}

TEST(QuantizeBlocks, ImportanceLowersTheWeightedError) {
  constexpr int64_t n = 32 * 512;
  auto x = test_row(n, 31);
  auto w = test_importance(n, 32);
  for (GgmlType t : kTypes) {
    Quantized weighted = quantize(t, x, w), plain = quantize(t, x, {});
    double e_weighted = weighted_error(x.data(), weighted.reconstruction.data(), w.data(), n);
    double e_plain = weighted_error(x.data(), plain.reconstruction.data(), w.data(), n);
    EXPECT_LT(e_weighted, e_plain) << ggml_type_name(t);
  }
}

double rms_error(GgmlType t, const std::vector<float>& x) {
  Quantized q = quantize(t, x, {});
  return std::sqrt(weighted_error(x.data(), q.reconstruction.data(), nullptr, static_cast<int>(x.size())) /
                   static_cast<double>(x.size()));
}

TEST(QuantizeBlocks, KQuantErrorShrinksWithEveryBitAndBeatsLegacyAtEqualSize) {
  std::mt19937 rng(51);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(256 * 64);
  for (auto& v : x) v = normal(rng);
  const GgmlType ladder[] = {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
                             GgmlType::Q8_0};
  double previous = 1e30;
  for (GgmlType t : ladder) {
    double e = rms_error(t, x);
    std::printf("%-6s rms error %.5f\n", std::string(ggml_type_name(t)).c_str(), e);
    EXPECT_LT(e, previous) << ggml_type_name(t);
    previous = e;
  }
  // Same bits per weight: Q4_K (4.5) against Q4_0 (4.5), Q5_K (5.5) against Q5_0 (5.5).
  EXPECT_LT(rms_error(GgmlType::Q4_K, x), rms_error(GgmlType::Q4_0, x));
  EXPECT_LT(rms_error(GgmlType::Q5_K, x), rms_error(GgmlType::Q5_0, x));
}

TEST(QuantizeBlocks, SameInputSameBytes) {
  auto x = test_row(32 * 16, 41);
  auto w = test_importance(32 * 16, 42);
  for (GgmlType t : kTypes) EXPECT_EQ(quantize(t, x, w).bytes, quantize(t, x, w).bytes) << ggml_type_name(t);
}

TEST(QuantizeBlocks, RefusesBadRequests) {
  std::vector<float> x(64, 1.0f);
  std::vector<std::byte> out(*ggml_nbytes(GgmlType::Q4_0, 64));
  EXPECT_FALSE(can_quantize_gguf(GgmlType::IQ2_XXS));
  EXPECT_THROW(quantize_row_gguf(GgmlType::IQ2_XXS, x, {}, out), Error);
  std::vector<std::byte> k_out(*ggml_nbytes(GgmlType::Q4_K, 256));
  EXPECT_THROW(quantize_row_gguf(GgmlType::Q4_K, x, {}, k_out), Error);  // 64 is not a 256-block
  std::vector<float> odd(48, 1.0f);
  EXPECT_THROW(quantize_row_gguf(GgmlType::Q4_0, odd, {}, out), Error);
  std::vector<std::byte> small(out.size() - 1);
  EXPECT_THROW(quantize_row_gguf(GgmlType::Q4_0, x, {}, small), Error);
  std::vector<float> short_importance(32, 1.0f);
  EXPECT_THROW(quantize_row_gguf(GgmlType::Q4_0, x, short_importance, out), Error);
  std::vector<float> negative(64, 1.0f);
  negative[5] = -1.0f;
  EXPECT_THROW(quantize_row_gguf(GgmlType::Q4_0, x, negative, out), Error);
  x[3] = std::nanf("");
  EXPECT_THROW(quantize_row_gguf(GgmlType::Q4_0, x, {}, out), Error);
}

}  // namespace
}  // namespace fsq
