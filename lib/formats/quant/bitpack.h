// Bit packing of quantization codes (the registry's widths, supported_bits() in
// quant_types.h) into uint32 words.
//
// Each row is an independent little-endian bit stream: code j of a row occupies bits
// [j*bits, (j+1)*bits) of the stream, bit 0 being the least significant bit of the row's
// first word. A 3-bit code may straddle two words. Each row is padded with zero bits to a
// whole number of 32-bit words. lib/formats/FORMAT.md has a worked example.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace fsq {

// uint32 words holding one packed row of `cols` codes: ceil(cols * bits / 32).
int64_t packed_words_per_row(int bits, int64_t cols);

// codes: row-major [rows, cols], each < 2^bits. Returns [rows, packed_words_per_row].
// Throws fsq::Error on unsupported bits, a size mismatch or an out-of-range code.
std::vector<uint32_t> pack_rows(std::span<const uint8_t> codes, int64_t rows, int64_t cols, int bits);

// The inverse: words [rows, packed_words_per_row] -> codes [rows, cols]. Padding bits are
// ignored. Throws fsq::Error on unsupported bits or a size mismatch.
std::vector<uint8_t> unpack_rows(std::span<const uint32_t> words, int64_t rows, int64_t cols, int bits);

}  // namespace fsq
