// The token embedding and output head in packed checkpoints (fsq quantize --head-bits): on a
// small model they are most of the bytes a decode step reads (SmolLM2-135M's tied 49152 x 576
// f32 matrix is 113 MB against ~57 MB for all W4 linears), so they are quantized with RTN
// into a uniform type the runtime's GEMV reads, and the embedding lookup dequantizes rows.
#pragma once

#include <optional>
#include <set>
#include <string>

#include "formats/architectures.h"
#include "formats/checkpoint.h"
#include "formats/packed_checkpoint.h"
#include "formats/quant/quant_types.h"

namespace fsq {

inline constexpr int kDefaultHeadBits = 8;

// The type of --head-bits: 8 -> 8-bit symmetric, groups of 64 (w8g64s; 8.25 bits/weight,
// llama.cpp's Q8_0 spends 8.5), 4 -> w4g32a, 16 -> nullopt (stored as in the source). Groups
// fall back as for linears when they do not divide the row. Throws fsq::Error on other widths.
std::optional<UniformQuant> head_quant_for_bits(int bits);

// Names (".weight") of the matrices --head-bits quantizes: the embedding, and lm_head when the
// checkpoint has its own (untied).
std::set<std::string> head_weight_names(const ArchSpec& arch, const Checkpoint& ckpt);

// RTN of one such matrix (any float dtype) into `quant`, named without ".weight".
QuantizedLinearToWrite quantize_head_matrix(const TensorView& weight, const UniformQuant& quant);

}  // namespace fsq
