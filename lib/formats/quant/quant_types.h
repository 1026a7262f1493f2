// The registry of named uniform quant types: one table (quant_types.cpp) of every
// bits x group size x symmetry combination the packers and kernels support.
//
// Name scheme: "w<bits>" + ("g<group_size>" | "pc" for per-channel) + ("a" asymmetric |
// "s" symmetric). Examples: w4g128a (4-bit, groups of 128 columns, stored zero points),
// w3g64s (3-bit symmetric, implicit zero 2^(b-1)), w8pca (8-bit, one group per row).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "formats/quant/uniform_quant.h"

namespace fsq {

struct UniformQuantType {
  std::string_view name;
  UniformQuant quant;
};

// Every registered type, in table order (bits, then group size, then asym before sym).
const std::vector<UniformQuantType>& uniform_quant_types();

// The type called `name`. Throws fsq::Error(where, ...) listing the valid names otherwise.
const UniformQuant& find_uniform_quant(std::string_view name, const std::string& where = "quant type");

// The bit widths and group sizes of the registry's types, in table order: bits ascending
// (2, 3, 4, 8), group sizes ascending with 0 (per-channel) last (32, 64, 128, 0).
const std::vector<int>& supported_bits();
const std::vector<int64_t>& supported_group_sizes();
// The same for messages and help text: "2, 3, 4, 8" and "32, 64, 128, 0 = per-channel".
std::string supported_bits_text();
std::string supported_group_sizes_text();

// Throws fsq::Error(where, ...) unless bits and group_size are supported_bits() and
// supported_group_sizes() values.
void validate_uniform_quant(const UniformQuant& q, const std::string& where = "quant type");
// Throws fsq::Error(where, ...) unless bits is one of supported_bits().
void validate_bits(int bits, const std::string& where);

// The registry name of a valid `q` (validates first).
std::string uniform_quant_name(const UniformQuant& q);

// Storage cost per weight of a row of `cols` inputs: code bits plus, per group, a 16-bit
// fp16 scale and (asymmetric only) an 8-bit zero point, spread over the group's columns.
// Bit-packing padding is not counted. Throws fsq::Error when cols is not a positive
// multiple of the group size.
double bits_per_weight(const UniformQuant& q, int64_t cols);

// The type a linear with `cols` inputs gets when `requested` is asked for: the requested one
// when its group size divides cols, else the largest smaller registry group size that does,
// else per channel (like llama.cpp's fallback for rows that do not fit a block).
UniformQuant quant_for_columns(const UniformQuant& requested, int64_t cols);

}  // namespace fsq
