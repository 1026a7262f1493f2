// Decode GEMV for 3-, 4- and 8-bit uniform weights with int8 activations, as llama.cpp
// multiplies its Q4_0/Q8_0 weights by Q8_0 activations: each row of x is quantized to int8
// per block of 32 columns, and the codes multiply in integers (AVX-512 VNNI vpdpbusd, or
// AVX2 vpmaddubsw). A 4-bit GEMV on floats spends ~3 instructions per weight on unpacking
// and converting, which keeps one core at about half its read bandwidth (issue 22); the
// integer dot product needs a fraction of that.
//
// This changes the numerics (x is rounded to 8 bits), so it is opt-in per linear
// (QuantLinear::set_int8_decode) and uniform_gemv (f32 activations) stays the exact path.
#pragma once

#include <cstdint>

#include "runtime/cpu/uniform_kernels.h"

namespace fsq::cpu {

// Columns per activation block: one int8 scale per block.
inline constexpr int64_t kQ8BlockCols = 32;

// Activation blocks (and so scales) of a row of `cols` columns.
inline constexpr int64_t q8_block_count(int64_t cols) { return (cols + kQ8BlockCols - 1) / kQ8BlockCols; }

// The spec of the activation quantization, for one row x[0, cols): block b holds columns
// [32 b, min(32 b + 32, cols)); d[b] = max |x| over the block / 127 and
// q[k] = round-to-nearest-even(x[k] / d[b]) (0 when d[b] == 0). A non-finite value in a
// block makes its d[b] NaN and its codes 0, so the GEMV's outputs become NaN, as the f32
// path's would. d has ceil(cols / 32) entries.
void quantize_q8_row(const float* x, int64_t cols, int8_t* q, float* d);

// True when uniform_gemv_q8 can run w with `isa`: 3-, 4- and 8-bit codes with CpuIsa::Avx2
// or CpuIsa::Avx512 (AVX-512 VNNI where the CPU has it, with VBMI for 3-bit codes; the AVX2
// kernel otherwise), and groups that are whole activation blocks (group_cols a multiple of
// 32 that divides or is divided by the kernel's chunk of 16 lanes, or one group per row).
bool uniform_q8_supported(const UniformWeightsView& w, CpuIsa isa);

// The spec: y[i, n] = sum_g scale[n, g] * sum_{b in g} d_i[b] * sum_{k in b} (q[n, k] - z[n, g]) * xq_i[k],
// with xq_i, d_i = quantize_q8_row(x[i]), summed in double and rounded to float. Any
// uniform view (all bit widths), no ISA needed.
KernelStatus uniform_gemv_q8_reference(const UniformWeightsView& w, const float* x, int64_t m, int64_t x_stride,
                                       float* y, int64_t y_stride);

// The fast path: the same sums in float (within a few float roundings per term of the
// spec). Batches of up to kMaxGemvRows rows of x share one pass over the weights; parallel
// over output rows. InvalidArgument when !uniform_q8_supported(w, isa) for a reason other
// than the CPU, IsaUnavailable when the CPU lacks what it needs.
KernelStatus uniform_gemv_q8(const UniformWeightsView& w, const float* x, int64_t m, int64_t x_stride, float* y,
                             int64_t y_stride, CpuIsa isa);

// Several matrices on the same x in one pass (a decoder layer's q/k/v, or gate/up): one
// int8 panel and one parallel region over all their output rows, each row's sum exactly as
// uniform_gemv_q8 computes it (bit-identical outputs). The matrices must share cols, bits
// and group_cols (the panel's layout); InvalidArgument otherwise or when any call would be,
// IsaUnavailable as uniform_gemv_q8. Why: on 2 threads the decode step's ~8 OpenMP regions
// per layer, and the serial panel fills between them, kept a worker waiting ~19 % of the
// time (perf, SmolLM2 W4).
struct Q8GemvOutput {
  const UniformWeightsView* w = nullptr;
  float* y = nullptr;
  int64_t y_stride = 0;
};
KernelStatus uniform_gemv_q8_together(const Q8GemvOutput* outputs, int count, const float* x, int64_t m,
                                      int64_t x_stride, CpuIsa isa);

// The prefill GEMM on int8 activations: the same spec as uniform_gemv_q8_reference, for
// any number of rows of x. Each tile of 32 weight rows is unpacked once into int8 codes and
// multiplied by every row of x (AVX-512 VNNI, x broadcast, 4 columns x 16 weight rows per
// vpdpbusd), so the unpacking that bounds the GEMV is amortized over the rows of a prompt.
// Supported: bits <= 4 (any zero points) or 8-bit symmetric (code - zero fits int8), cols
// and group_cols multiples of 32, and a CPU with AVX-512 VNNI.
bool uniform_gemm_q8_supported(const UniformWeightsView& w, CpuIsa isa);

// InvalidArgument when the call or the layout is unsupported, IsaUnavailable without VNNI.
KernelStatus uniform_gemm_q8(const UniformWeightsView& w, const float* x, int64_t m, int64_t x_stride, float* y,
                             int64_t y_stride, CpuIsa isa);

}  // namespace fsq::cpu
