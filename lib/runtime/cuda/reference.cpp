#include <cmath>

#include "runtime/cuda/cuda_backend.h"

namespace fsq::cuda {

void rms_norm_reference(const float* x, const float* w, float* y, int rows, int cols, float eps) {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<size_t>(r) * cols;
    double ss = 0;
    for (int c = 0; c < cols; ++c) ss += static_cast<double>(xr[c]) * xr[c];
    const float inv = static_cast<float>(1.0 / std::sqrt(ss / cols + eps));
    for (int c = 0; c < cols; ++c) y[static_cast<size_t>(r) * cols + c] = w[c] * (xr[c] * inv);
  }
}

}  // namespace fsq::cuda
