// Calibration inputs whose columns share a few strong factors plus their own noise: the
// correlated case GPTQ exists for (transformer activations are far from white). One fixed
// mixing of the factors for a given `cols`; `seed` draws the tokens.
#pragma once

#include <ATen/ATen.h>

namespace fsq::testing {

inline at::Tensor correlated_inputs(int64_t tokens, int64_t cols, int64_t seed) {
  constexpr int64_t kFactors = 6;
  at::manual_seed(7);
  const at::Tensor mixing = at::randn({kFactors, cols});
  at::manual_seed(seed);
  const at::Tensor factors = at::randn({tokens, kFactors}) * 3;
  return factors.matmul(mixing) + at::randn({tokens, cols}) * 0.3;
}

}  // namespace fsq::testing
