// An AutoAWQ GEMM decoder written for the tests from the published layout, independent of
// lib/formats/export (it does not use the exporter's order table): AutoAWQ's
// awq/utils/packing_utils.py unpacks each int32 into 8 nibbles (shifts 0, 4, .., 28) and
// restores the column order with AWQ_REVERSE_ORDER = [0, 4, 1, 5, 2, 6, 3, 7], i.e. output
// column 8j + c sits in nibble AWQ_REVERSE_ORDER[c] of word j; dequantize_gemm then takes
// (q - zero) * scale with scales/zeros row k / group_size.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/half.h"
#include "formats/safetensors.h"

namespace fsq::test {

inline constexpr int kAwqReverseOrder[8] = {0, 4, 1, 5, 2, 6, 3, 7};

// Element i of a little-endian tensor (copied: tensors need not be aligned).
template <typename T>
T element(const TensorView& t, int64_t i) {
  T v;
  std::memcpy(&v, t.data + i * static_cast<int64_t>(sizeof(T)), sizeof v);
  return v;
}

// The 4-bit value of output column n in row `row` of a packed [rows, N / 8] int32 tensor.
inline int awq_nibble(const TensorView& packed, int64_t row, int64_t n) {
  const int64_t words_per_row = packed.shape[1];
  const auto word = element<uint32_t>(packed, row * words_per_row + n / 8);
  return static_cast<int>((word >> (4 * kAwqReverseOrder[n % 8])) & 0xFu);
}

struct DecodedAwqLinear {
  int64_t out = 0;  // N
  int64_t in = 0;   // K
  std::vector<float> weight;  // [out, in], the fsq/nn.Linear orientation
};

// Reads B.qweight, B.qzeros, B.scales (asserting their dtypes and consistent shapes) and
// dequantizes in float32 with the fp16 scale widened exactly.
inline DecodedAwqLinear decode_autoawq_linear(const SafetensorsFile& file, const std::string& base,
                                              int64_t group_size) {
  DecodedAwqLinear d;
  const TensorView* qweight = file.find(base + ".qweight");
  const TensorView* qzeros = file.find(base + ".qzeros");
  const TensorView* scales = file.find(base + ".scales");
  EXPECT_TRUE(qweight && qzeros && scales) << base;
  if (!qweight || !qzeros || !scales) return d;
  EXPECT_EQ(qweight->dtype, DType::I32) << base;
  EXPECT_EQ(qzeros->dtype, DType::I32) << base;
  EXPECT_EQ(scales->dtype, DType::F16) << base;
  d.in = qweight->shape.at(0);
  d.out = qweight->shape.at(1) * 8;
  const int64_t groups = d.in / group_size;
  EXPECT_EQ(qzeros->shape, (std::vector<int64_t>{groups, d.out / 8})) << base;
  EXPECT_EQ(scales->shape, (std::vector<int64_t>{groups, d.out})) << base;
  if (qzeros->shape != std::vector<int64_t>{groups, d.out / 8} ||
      scales->shape != std::vector<int64_t>{groups, d.out})
    return d;
  d.weight.resize(static_cast<size_t>(d.out * d.in));
  for (int64_t k = 0; k < d.in; ++k) {
    const int64_t g = k / group_size;
    for (int64_t n = 0; n < d.out; ++n) {
      const int q = awq_nibble(*qweight, k, n);
      const int zero = awq_nibble(*qzeros, g, n);
      const float scale = f16_to_f32(element<uint16_t>(*scales, g * d.out + n));
      d.weight[n * d.in + k] = static_cast<float>(q - zero) * scale;
    }
  }
  return d;
}

}  // namespace fsq::test
