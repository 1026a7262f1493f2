// Random packed uniform matrices for the CUDA backend's tests (LibTorch-free): any bit pattern
// is a valid code, so the words are random; fp16 scales in [0.001, 0.05), zero points random.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "common/half.h"
#include "runtime/cpu/uniform_kernels.h"

namespace fsq::test {

// The vectors behind `view` (host pointers into them; not copyable, so they stay valid).
struct RandomUniform {
  std::vector<uint32_t> words;
  std::vector<uint16_t> scales;
  std::vector<uint8_t> zeros;
  cpu::UniformWeightsView view;
  RandomUniform(int64_t rows, int64_t cols, int bits, int64_t group_cols, bool asymmetric, uint32_t seed) {
    std::mt19937 rng(seed);
    view.rows = rows, view.cols = cols, view.bits = bits, view.group_cols = group_cols;
    view.words_per_row = (cols * bits + 31) / 32;
    words.resize(static_cast<size_t>(rows * view.words_per_row));
    for (uint32_t& w : words) w = rng();
    std::uniform_real_distribution<float> scale(0.001f, 0.05f);
    for (int64_t i = 0; i < rows * (cols / group_cols); ++i) {
      scales.push_back(f32_to_f16(scale(rng)));
      if (asymmetric) zeros.push_back(static_cast<uint8_t>(rng() % (1u << bits)));
    }
    view.words = words.data();
    view.scales = scales.data();
    view.zeros = asymmetric ? zeros.data() : nullptr;
  }
  RandomUniform(const RandomUniform&) = delete;
  RandomUniform& operator=(const RandomUniform&) = delete;
};

}  // namespace fsq::test
