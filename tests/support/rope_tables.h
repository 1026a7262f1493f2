// LLaMA rotary tables for tests and benchmarks that build a model spec by hand, LibTorch-free:
// cos/sin [positions, head_dim] in the rotate_half layout (each half repeats the angles), as
// runtime/rope.h builds them without rope scaling.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace fsq::test {

inline void llama_rope_tables(int64_t positions, int64_t head_dim, std::vector<float>& cos, std::vector<float>& sin,
                              double theta = 10000.0) {
  cos.assign(static_cast<size_t>(positions * head_dim), 0.f);
  sin.assign(cos.size(), 0.f);
  for (int64_t p = 0; p < positions; ++p)
    for (int64_t i = 0; i < head_dim; ++i) {
      const double angle = p * std::pow(theta, -2.0 * static_cast<double>(i % (head_dim / 2)) / head_dim);
      cos[p * head_dim + i] = static_cast<float>(std::cos(angle));
      sin[p * head_dim + i] = static_cast<float>(std::sin(angle));
    }
}

}  // namespace fsq::test
