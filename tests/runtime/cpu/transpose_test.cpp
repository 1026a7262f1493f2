// transpose.h: the scalar loops against the definition, and the AVX-512 tiles against the
// scalar loops bit for bit (they only move and add floats), on edge-tile shapes, with
// strides wider than the rows and guard values that must stay untouched.
#include "runtime/cpu/transpose.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/cpu/uniform_kernels.h"  // cpu_supports
#include "uniform_test_support.h"

namespace fsq {
namespace {

constexpr float kGuard = -12345.0f;
constexpr int64_t kPad = 3;  // strides are the rows' lengths plus this (guard values)

struct Shape {
  int64_t rows, cols;
};

// src: test::activations, whose NaN past each row's end poisons any read of the padding.
// dst has cols rows of stride rows + kPad, guards everywhere the call must not write.
std::vector<float> destination(const Shape& s, bool random, uint32_t seed) {
  std::vector<float> d = random ? test::activations(s.cols, s.rows, s.rows + kPad, seed)
                                : std::vector<float>(static_cast<size_t>(s.cols * (s.rows + kPad)), 0.0f);
  for (int64_t j = 0; j < s.cols; ++j)
    for (int64_t i = s.rows; i < s.rows + kPad; ++i) d[static_cast<size_t>(j * (s.rows + kPad) + i)] = kGuard;
  return d;
}

const std::vector<Shape> kShapes = {{1, 1}, {1, 17}, {16, 16}, {17, 15}, {5, 40}, {40, 33}, {64, 112}, {112, 16}};

TEST(Transpose, ScalarMatchesTheDefinitionAndKeepsTheGuards) {
  uint32_t seed = 1;
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(std::to_string(s.rows) + " x " + std::to_string(s.cols));
    const int64_t src_stride = s.cols + kPad, dst_stride = s.rows + kPad;
    const std::vector<float> src = test::activations(s.rows, s.cols, src_stride, ++seed);
    std::vector<float> set = destination(s, false, seed), add = destination(s, true, ++seed);
    const std::vector<float> before = add;
    cpu::transpose_f32_scalar(src.data(), src_stride, s.rows, s.cols, set.data(), dst_stride);
    cpu::add_transposed_f32_scalar(src.data(), src_stride, s.rows, s.cols, add.data(), dst_stride);
    for (int64_t j = 0; j < s.cols; ++j)
      for (int64_t i = 0; i < dst_stride; ++i) {
        const size_t d = static_cast<size_t>(j * dst_stride + i);
        if (i >= s.rows) {
          ASSERT_EQ(set[d], kGuard);
          ASSERT_EQ(add[d], kGuard);
          continue;
        }
        const float v = src[static_cast<size_t>(i * src_stride + j)];
        ASSERT_EQ(set[d], v) << "[" << j << ", " << i << "]";
        ASSERT_EQ(add[d], before[d] + v) << "[" << j << ", " << i << "]";
      }
  }
}

TEST(Transpose, Avx512MatchesScalarBitForBit) {
  if (!cpu::cpu_supports(cpu::CpuIsa::Avx512)) GTEST_SKIP() << "this CPU lacks AVX-512";
  uint32_t seed = 100;
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(std::to_string(s.rows) + " x " + std::to_string(s.cols));
    const int64_t src_stride = s.cols + kPad, dst_stride = s.rows + kPad;
    const std::vector<float> src = test::activations(s.rows, s.cols, src_stride, ++seed);
    std::vector<float> want = destination(s, false, seed), got = want;
    cpu::transpose_f32_scalar(src.data(), src_stride, s.rows, s.cols, want.data(), dst_stride);
    cpu::transpose_f32_avx512(src.data(), src_stride, s.rows, s.cols, got.data(), dst_stride);
    EXPECT_EQ(got, want);
    want = destination(s, true, ++seed);
    got = want;
    cpu::add_transposed_f32_scalar(src.data(), src_stride, s.rows, s.cols, want.data(), dst_stride);
    cpu::add_transposed_f32_avx512(src.data(), src_stride, s.rows, s.cols, got.data(), dst_stride);
    EXPECT_EQ(got, want);
  }
}

}  // namespace
}  // namespace fsq
