// The tensor quantizer against the scalar spec (formats/quant/uniform_reference.h): same
// codes, scales, zeros and dequantized values, bit for bit; on CUDA too when one is present.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <vector>

#include "formats/quant/quant_types.h"
#include "formats/quant/uniform_reference.h"
#include "quant_test_util.h"
#include "quantize/fake_quant.h"

namespace fsq {
namespace {

constexpr int64_t kRows = 5;
constexpr int64_t kCols = 256;

// Gaussian rows of very different magnitudes, plus a few outliers.
at::Tensor gaussian_weights() {
  at::manual_seed(21);
  at::Tensor w = at::randn({kRows, kCols}) * at::logspace(-3, 1, kRows).unsqueeze(1);
  w[0][7].fill_(5.0);
  w[2][130].fill_(-9.0);
  w[4][255].fill_(40.0);
  return w;
}

// Multiples of 1/8 with max |w| = 1.75 in every group: 4-bit symmetric scale 0.25, so half
// of all w / scale are exact ties, and round-half-to-even decides them.
at::Tensor tie_heavy_weights() {
  at::manual_seed(22);
  at::Tensor w = at::randint(-14, 15, {kRows, kCols}).to(at::kFloat) / 8;
  w.slice(1, 0, kCols, 32).fill_(1.75f);
  return w;
}

std::vector<float> reference_round_trip(const at::Tensor& w, const UniformQuant& q) {
  const std::vector<float> in = test::values(w);
  std::vector<float> out(in.size());
  dequantize_uniform(quantize_uniform(in.data(), w.size(0), w.size(1), q), out.data());
  return out;
}

void expect_matches_reference(const at::Tensor& w, const UniformQuant& q) {
  SCOPED_TRACE(uniform_quant_name(q));
  const std::vector<float> in = test::values(w);
  const QuantizedMatrix expected = quantize_uniform(in.data(), w.size(0), w.size(1), q);
  const QuantizedMatrix got = to_quantized_matrix(quantize_groups(w, q), q);
  EXPECT_EQ(got.codes, expected.codes);
  EXPECT_EQ(got.scales, expected.scales);
  EXPECT_EQ(got.zeros, expected.zeros);
  // Bit-exact (EXPECT_EQ on floats compares with ==, and no value here is NaN).
  EXPECT_EQ(test::values(fake_quantize(w, q)), reference_round_trip(w, q));
}

const std::vector<UniformQuant>& quant_types_to_check() {
  static const std::vector<UniformQuant> types{{2, 32, false}, {2, 64, true},  {3, 64, false}, {3, 128, true},
                                               {4, 128, false}, {4, 32, true}, {4, 0, false},  {8, 32, false},
                                               {8, 0, true}};
  return types;
}

TEST(FakeQuantReference, GaussianWeightsMatchBitForBit) {
  for (const UniformQuant& q : quant_types_to_check()) expect_matches_reference(gaussian_weights(), q);
}

TEST(FakeQuantReference, TiesRoundLikeTheReference) {
  for (const UniformQuant& q : quant_types_to_check()) expect_matches_reference(tie_heavy_weights(), q);
}

TEST(FakeQuantReference, CudaMatchesCpuBitForBit) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device";
  for (const UniformQuant& q : quant_types_to_check()) {
    for (const at::Tensor& w : {gaussian_weights(), tie_heavy_weights()}) {
      SCOPED_TRACE(uniform_quant_name(q));
      EXPECT_TRUE(at::equal(fake_quantize(w.to(at::kCUDA), q).cpu(), fake_quantize(w, q)));
    }
  }
}

}  // namespace
}  // namespace fsq
