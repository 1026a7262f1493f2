// Scalar on purpose: this is the layout's definition; fast packers/kernels are tested
// against it.
#include "formats/quant/bitpack.h"

#include <string>

#include "common/error.h"
#include "formats/quant/quant_types.h"

namespace fsq {
namespace {

constexpr int64_t kWordBits = 32;

void check_pack_shape(int64_t rows, int64_t cols, const char* where) {
  if (rows < 0 || cols < 0)
    throw Error(where, "negative shape [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
}

}  // namespace

int64_t packed_words_per_row(int bits, int64_t cols) {
  validate_bits(bits, "packed_words_per_row");
  check_pack_shape(0, cols, "packed_words_per_row");
  return (cols * bits + kWordBits - 1) / kWordBits;
}

std::vector<uint32_t> pack_rows(std::span<const uint8_t> codes, int64_t rows, int64_t cols, int bits) {
  const char* where = "pack_rows";
  validate_bits(bits, where);
  check_pack_shape(rows, cols, where);
  if (codes.size() != static_cast<size_t>(rows * cols))
    throw Error(where, "code count does not match the shape", std::to_string(rows * cols),
                std::to_string(codes.size()));
  const int64_t words_per_row = packed_words_per_row(bits, cols);
  const uint32_t max_code = (1u << bits) - 1;
  std::vector<uint32_t> words(static_cast<size_t>(rows * words_per_row), 0);
  for (int64_t r = 0; r < rows; ++r) {
    uint32_t* row = words.data() + r * words_per_row;
    for (int64_t j = 0; j < cols; ++j) {
      const uint32_t code = codes[static_cast<size_t>(r * cols + j)];
      if (code > max_code)
        throw Error(where, "code [" + std::to_string(r) + ", " + std::to_string(j) + "] = " +
                               std::to_string(code) + " does not fit in " + std::to_string(bits) + " bits");
      const int64_t bit = j * bits;
      const auto shift = static_cast<uint32_t>(bit % kWordBits);
      row[bit / kWordBits] |= code << shift;
      if (shift + static_cast<uint32_t>(bits) > kWordBits)  // straddles into the next word
        row[bit / kWordBits + 1] |= code >> (kWordBits - shift);
    }
  }
  return words;
}

std::vector<uint8_t> unpack_rows(std::span<const uint32_t> words, int64_t rows, int64_t cols, int bits) {
  const char* where = "unpack_rows";
  validate_bits(bits, where);
  check_pack_shape(rows, cols, where);
  const int64_t words_per_row = packed_words_per_row(bits, cols);
  if (words.size() != static_cast<size_t>(rows * words_per_row))
    throw Error(where, "word count does not match the shape", std::to_string(rows * words_per_row),
                std::to_string(words.size()));
  const uint32_t mask = (1u << bits) - 1;
  std::vector<uint8_t> codes(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    const uint32_t* row = words.data() + r * words_per_row;
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t bit = j * bits;
      const auto shift = static_cast<uint32_t>(bit % kWordBits);
      uint32_t code = row[bit / kWordBits] >> shift;
      if (shift + static_cast<uint32_t>(bits) > kWordBits)
        code |= row[bit / kWordBits + 1] << (kWordBits - shift);
      codes[static_cast<size_t>(r * cols + j)] = static_cast<uint8_t>(code & mask);
    }
  }
  return codes;
}

}  // namespace fsq
