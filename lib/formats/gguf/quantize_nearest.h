// Plain rounding into ggml's legacy block types, the arithmetic llama-quantize uses when it
// has no importance matrix (its reference row quantizers): the scale comes from the block's
// extreme values and every element is rounded once, with no search. fsq export --rounding
// nearest writes these, so a comparison with llama-quantize can run the same blocks (the
// files are then identical tensor for tensor) and so a 7B export costs about one read of the
// source rather than a search per block (quantize_blocks.h).
#pragma once

#include <cstddef>
#include <span>

#include "formats/gguf/ggml_types.h"

namespace fsq {

// Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0: the types whose plain rounding is a closed formula.
bool can_round_nearest(GgmlType t);

// One row x (whole 32-element blocks, finite values) into dst (ggml_nbytes(t, x.size())
// bytes). Per block: symmetric types take d = v / -2^(bits-1) from the element v of largest
// magnitude (the first such, so its code is the grid's end: Q4_0, Q5_0), or d = max|x| / 127
// (Q8_0, rounded half away from zero); affine types d = (max - min) / (2^bits - 1) with the
// offset min. Codes use the unrounded d; the block stores d (and min) as fp16.
// Throws fsq::Error for another type, a partial block, a non-finite element or a buffer of
// the wrong size.
void round_row_nearest(GgmlType t, std::span<const float> x, std::span<std::byte> dst);

}  // namespace fsq
