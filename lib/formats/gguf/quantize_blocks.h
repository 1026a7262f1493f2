// Scalar reference quantizers for ggml block formats: the writers behind `fsq export
// --format gguf`. Each block's scale (and min) is searched to minimize the importance-
// weighted squared error sum_i w_i (x_i - y_i)^2; with w_i = E[x_i^2] from calibration that
// is the block's expected contribution to the linear's output error (what llama-imatrix
// weights by). The stored fp16 scale is the one the error was measured with, so the codes
// are optimal for the scale in the file, and dequantize_row reproduces the reconstruction
// bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "formats/gguf/ggml_types.h"

namespace fsq {

// Types quantize_row_gguf writes: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, and the K-quants
// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K (quantize_kquants.h).
bool can_quantize_gguf(GgmlType t);

// Quantizes one row x (length a multiple of the type's block size) into `dst`
// (ggml_nbytes(t, x.size()) bytes). `importance` holds one non-negative weight per element
// (empty: all 1); a 16-element run whose weights are all zero is fitted unweighted. When
// `reconstruction` is non-empty (x.size() floats) it receives the values the blocks decode to.
// Throws fsq::Error for another type, a length that is not whole blocks, or spans of the
// wrong size.
void quantize_row_gguf(GgmlType t, std::span<const float> x, std::span<const float> importance,
                       std::span<std::byte> dst, std::span<float> reconstruction = {});

}  // namespace fsq
