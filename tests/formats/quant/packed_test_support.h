// Helpers for the packed checkpoint tests: deterministic weights and byte access.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "../test_support.h"
#include "formats/quant/uniform_reference.h"

namespace fsq::test {

// N(0, std) weights [rows, cols] from a fixed seed.
inline std::vector<float> gaussian(int64_t rows, int64_t cols, uint32_t seed, float std = 0.1f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, std);
  std::vector<float> w(static_cast<size_t>(rows * cols));
  for (float& v : w) v = normal(rng);
  return w;
}

inline QuantizedMatrix quantized(int64_t rows, int64_t cols, const UniformQuant& q, uint32_t seed) {
  const std::vector<float> w = gaussian(rows, cols, seed);
  return quantize_uniform(w.data(), rows, cols, q);
}

template <typename T>
std::vector<std::byte> to_bytes(const std::vector<T>& v) {
  const auto b = std::as_bytes(std::span<const T>(v));
  return {b.begin(), b.end()};
}

}  // namespace fsq::test
