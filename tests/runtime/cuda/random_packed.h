// Random packed matrices for the CUDA backend's tests (LibTorch-free): any bit pattern is a
// valid code, so the words are random. Uniform: fp16 scales in [0.001, 0.05), zero points
// random. LUT: centroids in (-0.3, 0.3), and a CSR part of a given share of each row's columns.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "common/half.h"
#include "runtime/cpu/lut_kernels.h"
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

struct RandomLut {
  std::vector<uint32_t> words;
  std::vector<uint16_t> lut, val, col;
  std::vector<int32_t> row_ptr;
  cpu::LutWeightsView view;
  // sparse_share: the chance that a column of a row is in the CSR part (0: dense-only).
  RandomLut(int64_t rows, int64_t cols, int bits, double sparse_share, uint32_t seed) {
    std::mt19937 rng(seed);
    view.rows = rows, view.cols = cols, view.bits = bits;
    view.words_per_row = (cols * bits + 31) / 32;
    words.resize(static_cast<size_t>(rows * view.words_per_row));
    for (uint32_t& w : words) w = rng();
    std::uniform_real_distribution<float> centroid(-0.3f, 0.3f);
    for (int64_t i = 0; i < rows << bits; ++i) lut.push_back(f32_to_f16(centroid(rng)));
    view.words = words.data();
    view.lut = lut.data();
    if (sparse_share <= 0) return;
    std::bernoulli_distribution keep(sparse_share);
    row_ptr.push_back(0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c)
        if (keep(rng)) {
          col.push_back(static_cast<uint16_t>(c));
          val.push_back(f32_to_f16(centroid(rng)));
        }
      row_ptr.push_back(static_cast<int32_t>(col.size()));
    }
    view.row_ptr = row_ptr.data();
    view.col = col.data();
    view.col_type = cpu::LutColType::U16;
    view.val = val.data();
    view.nnz = static_cast<int64_t>(col.size());
  }
  RandomLut(const RandomLut&) = delete;
  RandomLut& operator=(const RandomLut&) = delete;
};

}  // namespace fsq::test
