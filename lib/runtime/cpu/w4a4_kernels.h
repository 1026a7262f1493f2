// The W4A4 decode GEMV of QSpec's draft steps (issue 59): fsq's packed uniform weights
// times activations quantized per token (one scale per row of x, symmetric, codes in
// [-7, 7]), as QuaRot and QSpec quantize them after the Hadamard rotation
// (quantize/rotation) has spread the residual stream's outliers.
//
// Per token, not per block of 32: the papers' draft is per token, a rotated row is close to
// Gaussian so one scale loses little, and per token is what a W4A4 tensor-core GEMM needs
// on CUDA. No clipping (ratio 1).
//
// Honest cost: the codes are int8 values in [-7, 7] and run through the W4A8 integer loops
// of uniform_q8_kernels.h (the panel is filled with one scale for every block), so on this
// CPU a W4A4 step costs what a W4A8 step costs: AVX-512 VNNI and AVX2 have no 4-bit dot
// product. The draft is cheaper than the f32-activation verifier only by the int8 loops'
// advantage over the f32 GEMV, not by 4-bit arithmetic.
#pragma once

#include <cstdint>

#include "runtime/cpu/uniform_kernels.h"
#include "runtime/cpu/uniform_q8_kernels.h"  // Q8GemvOutput

namespace fsq::cpu {

// Largest code of the symmetric 4-bit grid ([-7, 7]; -8 unused, so the grid is symmetric).
inline constexpr int kA4MaxCode = 7;

// The spec of the activation quantization, for one row x[0, cols): s = max |x| / 7 and
// q[k] = round-to-nearest-even(x[k] / s) (0 when s == 0); d[b] = s for every block of 32
// columns (the Q8 panel's layout). A non-finite value makes s NaN and every code 0, so the
// outputs become NaN as the f32 path's would.
void quantize_a4_row(const float* x, int64_t cols, int8_t* q, float* d);

// y[i, n] = s_i * sum_g scale[n, g] * sum_{k in g} (code[n, k] - zero[n, g]) * q_i[k],
// summed in double and rounded to float. Any uniform view; no ISA needed.
KernelStatus uniform_gemv_a4_reference(const UniformWeightsView& w, const float* x, int64_t m, int64_t x_stride,
                                       float* y, int64_t y_stride);

// True when uniform_gemv_a4 can run w with `isa`: CpuIsa::Scalar always (the reference), else
// exactly when uniform_q8_supported(w, isa).
bool uniform_a4_supported(const UniformWeightsView& w, CpuIsa isa);

// Dispatch: AVX-512 (VNNI) or AVX2 through the q8 loops (the same sums in float, within a few
// float roundings per term of the spec); Scalar runs the reference. Status as uniform_gemv_q8.
KernelStatus uniform_gemv_a4(const UniformWeightsView& w, const float* x, int64_t m, int64_t x_stride, float* y,
                             int64_t y_stride, CpuIsa isa);

// Several matrices on the same x (q/k/v, gate/up): one panel, one parallel region, as
// uniform_gemv_q8_together; each output bit-identical to uniform_gemv_a4's. No Scalar.
KernelStatus uniform_gemv_a4_together(const Q8GemvOutput* outputs, int count, const float* x, int64_t m,
                                      int64_t x_stride, CpuIsa isa);

}  // namespace fsq::cpu
