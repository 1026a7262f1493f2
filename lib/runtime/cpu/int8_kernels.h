// CPU kernels for W8A8 linears (SmoothQuant, integer-only): int8 weights, symmetric per
// output channel, times int8 activations, symmetric per token (dynamic) or per tensor
// (static scale from calibration), accumulated exactly in int32. Raw pointers, sizes and
// strides only: no LibTorch here (DESIGN.md); Int8Linear is the bridge.
//
// The arithmetic every variant performs, bit for bit (int8_linear_reference is the spec):
//   activation codes   xq[i, k] = clamp(nearbyint(x[i, k] * inv_i), -127, 127)
//                      per token:  amax_i = max_k |x[i, k]|, xs_i = amax_i / 127,
//                                  inv_i = 127 / amax_i  (amax_i == 0: xs_i = 0, codes 0)
//                      per tensor: xs_i = s (given), inv_i = 1 / s
//                      (nearbyint: round half to even, the default rounding mode; the clamp
//                      is fmin(fmax(v, -127), 127), so a NaN product, 0 * inf when 127 / amax_i
//                      overflows, gives -127 on every ISA; a NaN input is the caller's bug
//                      and gives unspecified codes)
//   int32 product      acc[i, n] = sum_k xq[i, k] * wq[n, k]        (exact, any order)
//   epilogue           y[i, n]   = float(acc[i, n]) * (xs_i * ws[n])
// so every ISA returns the same bits as the reference. Codes are kept in [-127, 127]
// (never -128) on both sides, which keeps pairwise products of u8/s8 instructions exact.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/kernel_status.h"

namespace fsq::cpu {

// One int8 weight matrix as stored: W [rows = out features N, cols = in features K].
struct Int8WeightsView {
  const int8_t* q = nullptr;       // [rows, cols] row-major, every value in [-127, 127]
  const float* scales = nullptr;   // [rows] per output channel, finite and >= 0
  int64_t rows = 0, cols = 0;
};

// Ok when pointers are non-null and sizes positive (values are not scanned).
KernelStatus check_int8_view(const Int8WeightsView& w);

enum class ActQuant {
  PerToken,   // dynamic: one scale per row of x, from its absmax
  PerTensor,  // static: one given scale for every row
};

// A per-tensor mode needs a finite positive scale; per-token ignores it.
inline bool static_scale_ok(ActQuant mode, float s) { return mode == ActQuant::PerToken || (std::isfinite(s) && s > 0.0f); }

// The weights rearranged once into the layout the fast kernels read (the layout is private
// to int8_kernels*.cpp; it holds the codes, per-row sums where a variant needs them, and
// whatever padding its loops want). Build with int8_prepare_weights into a 64-byte aligned
// buffer of int8_prepared_bytes bytes; the view must outlive nothing but the buffer.
struct Int8PreparedView {
  const std::byte* data = nullptr;
  const float* scales = nullptr;  // [rows], the caller's (not copied)
  int64_t rows = 0, cols = 0;
};
int64_t int8_prepared_bytes(int64_t rows, int64_t cols);
// out: 64-byte aligned, int8_prepared_bytes(w.rows, w.cols) bytes. Returns the view over it.
KernelStatus int8_prepare_weights(const Int8WeightsView& w, std::byte* out, Int8PreparedView* prepared);

// Activation codes and scales as defined above: q [m, cols] (row stride q_stride),
// x_scales [m]. For PerTensor, static_scale must be finite and > 0.
KernelStatus quantize_activations_int8(const float* x, int64_t m, int64_t cols, int64_t x_stride, ActQuant mode,
                                       float static_scale, int8_t* q, int64_t q_stride, float* x_scales,
                                       CpuIsa isa);

// The spec, scalar and slow on purpose: quantizes x and computes y as above.
// x [m, cols] row stride x_stride, y [m, rows] row stride y_stride.
KernelStatus int8_linear_reference(const Int8WeightsView& w, const float* x, int64_t m, int64_t x_stride,
                                   ActQuant mode, float static_scale, float* y, int64_t y_stride);

// The fast path, any m (decode GEMV for small m, a blocked GEMM for prefill): quantizes
// the activations, multiplies in int8 (AVX-512 VNNI vpdpbusd where the CPU has it, else
// AVX-512BW / AVX2 vpmaddubsw + vpmaddwd) and applies the epilogue; parallel over output
// rows and, for large m, over row blocks of x (OpenMP). Bit-identical to the reference.
// Writes only y[i, 0..rows) for each i.
KernelStatus int8_linear(const Int8PreparedView& w, const float* x, int64_t m, int64_t x_stride, ActQuant mode,
                         float static_scale, float* y, int64_t y_stride, CpuIsa isa);

// The integer part alone, for the integer-only path: acc [m, rows] (row stride acc_stride)
// = xq [m, cols] (row stride xq_stride, codes in [-127, 127]) times W^T, exact int32.
KernelStatus int8_gemm_int32(const Int8PreparedView& w, const int8_t* xq, int64_t m, int64_t xq_stride,
                             int32_t* acc, int64_t acc_stride, CpuIsa isa);
// Its reference (from the unprepared weights).
KernelStatus int8_gemm_int32_reference(const Int8WeightsView& w, const int8_t* xq, int64_t m, int64_t xq_stride,
                                       int32_t* acc, int64_t acc_stride);

// The kernel variants behind a CpuIsa (CpuIsa::Avx512 runs Avx512Vnni where the CPU has
// VNNI, else Avx512Bw), so that tests and benchmarks can also run the one the CPU would not
// pick. The *_with functions are int8_linear / int8_gemm_int32 with the variant named.
enum class Int8Kernel { Scalar, Avx2, Avx512Bw, Avx512Vnni };
Int8Kernel int8_kernel_for(CpuIsa isa);  // the variant the fast paths run for isa
bool int8_kernel_supported(Int8Kernel k);
const char* int8_kernel_name(Int8Kernel k);  // "scalar", "avx2", "avx512bw", "avx512vnni"
KernelStatus int8_linear_with(const Int8PreparedView& w, const float* x, int64_t m, int64_t x_stride, ActQuant mode,
                              float static_scale, float* y, int64_t y_stride, Int8Kernel kernel);
KernelStatus int8_gemm_int32_with(const Int8PreparedView& w, const int8_t* xq, int64_t m, int64_t xq_stride,
                                  int32_t* acc, int64_t acc_stride, Int8Kernel kernel);

}  // namespace fsq::cpu
