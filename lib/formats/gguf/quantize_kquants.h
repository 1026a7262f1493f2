// K-quant super-block writers (256 elements): Q2_K, Q3_K, Q4_K, Q5_K, Q6_K. Internal to
// lib/formats/gguf; quantize_row_gguf (quantize_blocks.h) is the public entry point.
#pragma once

#include <cstddef>

#include "formats/gguf/ggml_types.h"

namespace fsq {

bool can_quantize_kquant(GgmlType t);

// One super-block: x and w hold 256 values (w > 0 somewhere in every 16-element run), out
// receives the type's block bytes, y (when not null) the 256 values they decode to.
void quantize_kquant_block(GgmlType t, const float* x, const float* w, std::byte* out, float* y);

}  // namespace fsq
