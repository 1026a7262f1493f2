// Non-uniform (lookup-table) quantization with a sparse part: SqueezeLLM's dense-and-sparse
// format. Row r has 2^bits fp16 centroids lut[r][*]; the code q of weight (r, c) stands for
// lut[r][q], and a CSR matrix S adds exact fp16 corrections on top:
//
//   w'[r, c] = f16_to_f32(lut[r, q[r, c]]) + f16_to_f32(S[r, c])   (S[r, c] = 0 when absent)
//
// summed in float32. This file is the spec: the packed format (FORMAT.md), the quantizer
// (lib/quantize/squeezellm) and every kernel (lib/runtime/cpu/lut_kernels.h) follow it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fsq {

// Code widths a LUT linear may use.
inline bool lut_bits_supported(int bits) { return bits == 3 || bits == 4; }

// Quant type names of the LUT types: "lut3", "lut4" (the sparse part is optional in both).
std::string lut_quant_name(int bits);
// The code width of a LUT type name; 0 when `name` is not one.
int lut_bits_of(std::string_view name);

// Canonical (unpacked) values of one LUT-quantized weight matrix [rows, cols].
struct LutMatrix {
  int bits = 4;  // 3 or 4
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<uint8_t> codes;     // [rows, cols], each < 2^bits
  std::vector<uint16_t> lut;      // [rows, 2^bits] fp16 bit patterns (finite)
  // The sparse part in CSR; all three empty when there is none.
  std::vector<int32_t> row_ptr;   // [rows + 1]: 0, non-decreasing, last = nnz
  std::vector<int32_t> col;       // [nnz]: strictly increasing within a row, each < cols
  std::vector<uint16_t> val;      // [nnz] fp16 bit patterns (finite)

  int64_t levels() const { return int64_t{1} << bits; }
  int64_t nnz() const { return static_cast<int64_t>(val.size()); }
  bool has_sparse() const { return !row_ptr.empty(); }
};

// Throws fsq::Error(where, ...) naming the first problem: unsupported bits, a size that
// disagrees with rows/cols/bits, a code out of range, a non-finite centroid or value, or a
// malformed CSR part (row_ptr not starting at 0, decreasing, not ending at nnz; a column out
// of range or not strictly increasing within its row).
void validate_lut_matrix(const LutMatrix& m, const std::string& where);

// The scalar reference: writes rows * cols floats (row-major) to `out`. Validates first.
void dequantize_lut(const LutMatrix& m, float* out);

// Storage cost per weight, counted honestly: code bits, plus each row's 2^bits fp16
// centroids spread over its cols, plus the CSR part (fp16 value and a 16-bit column index
// when cols <= 65536, else 32-bit, per nonzero, and the int32 row pointers) spread over
// rows * cols.
double lut_bits_per_weight(int bits, int64_t rows, int64_t cols, int64_t nnz);

}  // namespace fsq
