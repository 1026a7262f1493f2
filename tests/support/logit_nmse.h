// How close the CUDA decoders' logits must come to the CPU runtime's (issue 20), shared by
// their tests. Header-only, LibTorch-free (the CUDA test binary runs on GPU machines as built).
#pragma once

#include <cstdint>

#include "runtime/cuda/quant_gemv.h"  // ActType

namespace fsq::test {

// Issue 20's bound on CUDA against CPU logits, for f16 values between the ops. The error comes
// from rounding those values, so its NMSE scales with the square of the unit roundoff: bf16's
// is 8 times f16's, hence 64 times the bound.
inline constexpr double kF16LogitNmse = 1e-4;
inline constexpr double kBf16LogitNmse = 64 * kF16LogitNmse;
inline double logit_nmse_bound(cuda::ActType act) {
  return act == cuda::ActType::F16 ? kF16LogitNmse : kBf16LogitNmse;
}

// sum (got - want)^2 / sum want^2 over n values.
inline double nmse(const float* got, const float* want, int64_t n) {
  double err = 0, ref = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    err += d * d;
    ref += static_cast<double>(want[i]) * want[i];
  }
  return err / ref;
}

}  // namespace fsq::test
