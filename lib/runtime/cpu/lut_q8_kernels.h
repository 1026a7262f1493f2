// Decode GEMV for 4- and 3-bit LUT (SqueezeLLM) weights on int8 activations, the LUT
// counterpart of uniform_gemv_q8: x is quantized to int8 per block of 32 columns
// (quantize_q8_row) and each row's centroids to int8 with one scale per row, so that 64
// codes are looked up by one vpshufb (the 16-entry table fits one 128-bit lane; 3-bit codes
// are first spread to bytes by vpermb + vpmultishiftqb, or read from bit planes) and
// multiplied by one vpdpbusd (AVX-512 VNNI). On AVX2 alone (4-bit codes): 32 codes per
// vpshufb, multiplied by vpmaddubsw. The float GEMV (lut_gemv) spends a vpermps, a shift
// and an FMA per 16 codes and runs one core at about 70 % of its read rate.
//
// It changes the numerics (x and the centroids rounded to 8 bits), so it is opt-in per
// linear (LutLinear::set_int8_decode, on by default in the decode fast path as for uniform
// types); lut_gemv stays the exact path. The CSR part is added in float from x itself, as
// lut_gemv adds it.
#pragma once

#include <cstdint>

#include "runtime/cpu/lut_kernels.h"

namespace fsq::cpu {

// Optional, for a CSR part with 16-bit columns: the nonzeros again in slices of 16 rows, so
// that the AVX-512 GEMV sums 16 rows at once (one masked FMA per step) with no loop, branch
// or reduction per row. Rows are sorted by their count of nonzeros (most first, stable)
// within windows of kLutQ8SliceWindowRows rows, which keeps a slice's rows about as long as
// each other (padding 1.13x at 0.45 % of 4096 columns, against 1.43x unsorted); slice s
// holds sorted rows 16 s .. 16 s + 15 of window s / 4. Step j of a slice: lane l's j-th
// nonzero (column, then fp16 value, 16 of each; column 0 and value 0 past the lane's count).
inline constexpr int64_t kLutQ8SliceRows = 16, kLutQ8SliceWindowRows = 64;
struct LutQ8SparseSlices {
  int64_t slices = 0;                    // ceil(rows / 16)
  const int32_t* lane_rows = nullptr;    // [slices * 16]: the row lane l of slice s sums, -1 for none
  const int32_t* lane_counts = nullptr;  // [slices * 16]: that row's nonzeros (0 for none)
  const int32_t* slice_steps = nullptr;  // [slices + 1]: slice s is steps [slice_steps[s], slice_steps[s + 1])
  const uint16_t* steps = nullptr;       // [steps, 32]: 16 columns, then 16 values
};
// Whether w has a CSR part given to slices: 16-bit columns, at most 4096 of them, and at
// least 8 nonzeros per row on average (lut_q8_gemv.cpp says why).
bool lut_q8_sparse_slices_apply(const LutWeightsView& w);
// ceil(rows / 16): LutQ8SparseSlices::slices.
int64_t lut_q8_slice_count(int64_t rows);
// The number of steps prepare_lut_q8_sparse_slices writes, for a view it applies to.
int64_t lut_q8_sparse_slice_steps(const LutWeightsView& w);
// Fills the arrays of LutQ8SparseSlices (sizes as there; steps: lut_q8_sparse_slice_steps(w) * 32).
void prepare_lut_q8_sparse_slices(const LutWeightsView& w, int32_t* lane_rows, int32_t* lane_counts,
                                  int32_t* slice_steps, uint16_t* steps);

// Row n's centroids as int8: t[n, j] = round-to-nearest-even(c[n, j] / s[n]) with
// s[n] = max_j |c[n, j]| / 127 (t = 0 when s is 0), stored biased to unsigned (t + 128, what
// vpdpbusd takes): tables[n * 16 + j]. Non-finite centroids make s[n] NaN (outputs NaN).
struct LutQ8Tables {
  const uint8_t* tables = nullptr;  // [rows, 16]
  const float* scales = nullptr;    // [rows]
  // Optional, for a CSR part: the row of each nonzero (prepare_lut_q8_sparse_rows). With it
  // the GEMV adds a CSR part of few nonzeros per row as one stream instead of row by row.
  const uint16_t* sparse_rows = nullptr;  // [nnz]
  // Optional, for 3-bit codes: the codes again in bit planes (prepare_lut_q8_codes3), which
  // the AVX-512 GEMV then reads instead of the packed words (one instruction fewer per 64
  // columns; lut_q8_avx512vbmi.cpp); lut_q8_codes3_bytes(w) bytes. The prefill GEMM reads the
  // words.
  const uint8_t* codes3 = nullptr;
  // Optional, for a CSR part: its slices (LutQ8SparseSlices), which the AVX-512 GEMV then
  // reads instead of the CSR arrays (and sparse_rows); the AVX2 GEMV and the GEMM ignore them.
  const LutQ8SparseSlices* sparse_slices = nullptr;
};
void prepare_lut_q8_tables(const LutWeightsView& w, uint8_t* tables, float* scales);
// Whether the GEMV reads w's CSR part as one stream of nonzeros, which needs sparse_rows:
// rows at most 65536 (u16) and fewer than 8 nonzeros per row on average (else row by row,
// or as slices, neither of which reads sparse_rows).
bool lut_q8_sparse_rows_apply(const LutWeightsView& w);
// rows[e] = the row of nonzero e, for a view that check_lut_sparse accepted and for which
// lut_q8_sparse_rows_apply holds.
void prepare_lut_q8_sparse_rows(const LutWeightsView& w, uint16_t* rows);

// The 3-bit codes in a layout the AVX-512 GEMV decodes without spreading them first and
// against the 4-bit activation panel (lut_q8_avx512vbmi.cpp, Planes3). Per row, chunks of 128
// columns, each split into its even and its odd columns as the q8 panel holds a 4-bit chunk:
//   full chunk (more than 64 columns of the row left), 48 bytes: 4 qwords of the columns' low
//   2 bits, qword i: bits [0, 16) even columns 16 i + 2 j (j < 8, 2 bits each), [16, 32) even
//   columns 64 + 16 i + 2 j, [32, 48) and [48, 64) the odd columns one past those; then the
//   high bits, one qword for the 64 even columns (bit b: column 2 b), one for the odd ones;
//   last chunk of at most 64 columns, 24 bytes: 2 qwords, qword i: bits [0, 16) even columns
//   16 i + 2 j, [16, 32) even columns 32 + 16 i + 2 j, [32, 64) the odd columns one past;
//   then the high bits, a dword for the 32 even columns, a dword for the odd ones.
// Columns past the row's end hold code 0. Row n starts at n * lut_q8_codes3_row_bytes(cols).
int64_t lut_q8_codes3_row_bytes(int64_t cols);
int64_t lut_q8_codes3_bytes(const LutWeightsView& w);
// w.bits == 3; out: lut_q8_codes3_bytes(w) bytes.
void prepare_lut_q8_codes3(const LutWeightsView& w, uint8_t* out);

// cols a multiple of 8, and isa Avx512 on a CPU with AVX-512 VNNI (3-bit codes also VBMI), or
// isa Avx2 on a CPU with AVX2 for 4-bit codes.
bool lut_q8_supported(const LutWeightsView& w, CpuIsa isa);

// The spec: y[i, n] = s[n] * sum_b d_i[b] * sum_{k in b} t[n, q[n, k]] * xq_i[k] + the CSR
// part sum_e x[i, col_e] * val_e, summed in double and rounded to float, with
// xq_i, d_i = quantize_q8_row(x[i]). Any 3- or 4-bit view, no ISA needed.
KernelStatus lut_gemv_q8_reference(const LutWeightsView& w, const LutQ8Tables& t, const float* x, int64_t m,
                                   int64_t x_stride, float* y, int64_t y_stride);

// The fast path: the dense sums in float per chunk of 128 columns (AVX2: per 64; exact int32
// dot products scaled by each lane's d), the row's bias of 128 removed once (AVX2 multiplies
// signed entries: no bias), then times s[n]; the CSR part as lut_gemv adds it. Batches of up
// to kMaxGemvRows rows of x share one pass over the weights; parallel over output rows, each
// output computed by one thread in a fixed order. InvalidArgument when the call or the
// layout is unsupported, IsaUnavailable when lut_q8_supported(w, isa) is false.
KernelStatus lut_gemv_q8(const LutWeightsView& w, const LutQ8Tables& t, const float* x, int64_t m, int64_t x_stride,
                         float* y, int64_t y_stride, CpuIsa isa);

// The prefill GEMM on int8 activations, any number of rows of x, with the same spec as
// lut_gemv_q8_reference: the int8 table entries of each tile of 32 weight rows are
// looked up once (vpshufb) and multiplied by every row of x (the VNNI kernel of
// uniform_gemm_q8, uniform_q8_isa.h); the CSR part is added in float. cols a multiple of
// 32 and a CPU with AVX-512 VNNI; 3-bit codes also need AVX-512 VBMI (to unpack them).
bool lut_gemm_q8_supported(const LutWeightsView& w, CpuIsa isa);
// The caller has run check_lut_sparse on w (as for every LUT kernel). InvalidArgument when the
// call or the layout is unsupported, IsaUnavailable without VNNI.
KernelStatus lut_gemm_q8(const LutWeightsView& w, const LutQ8Tables& t, const float* x, int64_t m, int64_t x_stride,
                         float* y, int64_t y_stride, CpuIsa isa);

}  // namespace fsq::cpu
