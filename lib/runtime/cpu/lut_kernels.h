// CPU kernels for LUT-quantized (SqueezeLLM dense-and-sparse) linears: codes bit-packed as
// in lib/formats/FORMAT.md, one fp16 table of 2^bits centroids per row, an optional CSR
// part of fp16 corrections; activations fp32. Raw pointers, sizes and strides only: no
// LibTorch here (DESIGN.md).
//
// Every kernel computes with the dequantized weights of formats/quant/lut_quant.h,
//   w'[n, k] = f16_to_f32(lut[n, q[n, k]]) + f16_to_f32(S[n, k])   (S = 0 where absent),
// lut_matmul_reference is the spec the optimized kernels are tested against.
#pragma once

#include <cstdint>

#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/kernel_status.h"  // KernelStatus, kMaxGemvRows

namespace fsq::cpu {

enum class LutColType { U16, I32 };

// One LUT-quantized weight matrix W [rows = out features N, cols = in features K].
struct LutWeightsView {
  const uint32_t* words = nullptr;  // [rows, words_per_row] packed codes
  int64_t rows = 0, cols = 0, words_per_row = 0;
  int bits = 4;                      // 3 or 4
  const uint16_t* lut = nullptr;     // [rows, 2^bits] fp16 bit patterns
  // optional CSR part; row_ptr == nullptr means dense-only
  const int32_t* row_ptr = nullptr;  // [rows + 1]
  const void* col = nullptr;         // [nnz], uint16_t or int32_t per col_type
  LutColType col_type = LutColType::U16;
  const uint16_t* val = nullptr;     // [nnz] fp16
  int64_t nnz = 0;
};

// O(1): reads row_ptr[0] and row_ptr[rows] only. Ok when bits is 3 or 4,
// rows, cols > 0, words_per_row == ceil(cols * bits / 32), words and lut are non-null, and
// the sparse part is either absent (row_ptr, col, val null and nnz == 0) or present with
// non-null col (and val when nnz > 0), 0 <= nnz <= INT32_MAX, U16 columns only when
// cols <= 65536, row_ptr[0] == 0 and row_ptr[rows] == nnz. Every kernel runs it.
KernelStatus check_lut_view(const LutWeightsView& w);

// O(nnz): check_lut_view, then every row's pointers non-decreasing and its columns strictly
// increasing and in [0, cols). The kernels index x and their outputs by these columns without
// checking them again, so a caller runs this once per matrix (at load) before any kernel.
KernelStatus check_lut_sparse(const LutWeightsView& w);

// The spec: y[i, n] = sum_k x[i, k] * w'[n, k] for i < m, n < rows, with w' in float32 exactly
// as dequantize_lut computes it (centroid + sparse value) and the sum over k accumulated in
// double (then rounded to float). x is [m, cols] with row stride x_stride; y is [m, rows]
// with row stride y_stride. Runs check_lut_sparse itself. Scalar and slow on purpose.
KernelStatus lut_matmul_reference(const LutWeightsView& w, const float* x, int64_t m, int64_t x_stride, float* y,
                                  int64_t y_stride);

// The decode path (any m is accepted; batches of up to kMaxGemvRows rows of x share one pass
// over the weights). Per weight row the fp16 table is converted to float once; codes are
// unpacked to 32-bit lanes and looked up in registers (AVX-512: one vpermps per 16 codes;
// AVX2: two vpermps and a blend for 4-bit, one for 3-bit); every row of the batch then
// multiply-accumulates the same weights. Long rows go in fixed column chunks (4-bit; the
// chunk sums are added in order). The CSR part is added after a thread's dense rows, row by
// row (x[i, col] * val, summed in float, added to the row's dense sum). Threads (OpenMP) get
// contiguous ranges of output rows of equal cost, counting each nonzero as well as each
// code, so the nonzeros are balanced across threads however they are spread over rows.
// Each output is computed by one thread in a fixed order: results do not depend on the
// number of threads. Writes only y[i, 0..rows) for each i.
KernelStatus lut_gemv(const LutWeightsView& w, const float* x, int64_t m, int64_t x_stride, float* y,
                      int64_t y_stride, CpuIsa isa);

// Whether lut_gemv with CpuIsa::Avx512 unpacks 3-bit codes with VBMI's vpmultishiftqb when
// the CPU has it (the default; bit-identical results, fewer instructions). false forces the
// plain AVX-512 unpacking, for tests and benchmarks that compare the two. Returns the
// previous setting; set it only while no kernel runs.
bool set_lut_vbmi_allowed(bool allowed);
bool lut_vbmi_in_use();  // allowed, and the CPU has AVX-512 VBMI

// The prefill path: rows [row0, row0 + nrows) of w' into out [nrows, cols] (row-major,
// contiguous), bit-exact with dequantize_lut (sparse corrections included).
KernelStatus lut_dequantize_rows(const LutWeightsView& w, int64_t row0, int64_t nrows, float* out, CpuIsa isa);

}  // namespace fsq::cpu
