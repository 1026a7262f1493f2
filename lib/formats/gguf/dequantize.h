// Scalar reference dequantizers for ggml block formats: the spec every optimized kernel
// and every GGUF importer is checked against. Plain loops, no SIMD, no allocation.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "formats/gguf/ggml_types.h"

namespace fsq {

// True for the types dequantize_row handles: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0,
// Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL.
bool can_dequantize(GgmlType t);

// IQ4_NL's 16 levels (ascending), shared by its dequantizer and quantizer.
const std::array<int8_t, 16>& iq4nl_levels();

// Decodes `n` elements of type `t` from `src` (little-endian ggml blocks, any alignment)
// into `dst`. Throws fsq::Error when `t` has no reference dequantizer or `n` is negative
// or not a multiple of the type's block size.
void dequantize_row(GgmlType t, const std::byte* src, float* dst, int64_t n);

}  // namespace fsq
