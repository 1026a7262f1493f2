// Bit packing: hand-derived words document the bit order; random round trips cover every
// width and row lengths that do not fill whole words.
#include "formats/quant/bitpack.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "common/error.h"

namespace fsq {
namespace {

TEST(BitPack, FourBitCodesReadAsHexDigitsFromTheLowEnd) {
  // Code j sits at bits [4j, 4j+4): the word's hex digits are the codes, last code first.
  const std::vector<uint8_t> codes = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(pack_rows(codes, 1, 8, 4), std::vector<uint32_t>{0x87654321u});
}

TEST(BitPack, TwoBitCodesFillEachByteFromBit0) {
  // Codes 0,1,2,3 -> 0b11'10'01'00 = 0xE4 in every byte.
  std::vector<uint8_t> codes;
  for (int i = 0; i < 16; ++i) codes.push_back(static_cast<uint8_t>(i % 4));
  EXPECT_EQ(pack_rows(codes, 1, 16, 2), std::vector<uint32_t>{0xE4E4E4E4u});
}

TEST(BitPack, EightBitCodesAreLittleEndianBytesAndTheLastWordIsZeroPadded) {
  const std::vector<uint8_t> codes = {0x11, 0x22, 0x33, 0x44, 0x55};
  EXPECT_EQ(pack_rows(codes, 1, 5, 8), (std::vector<uint32_t>{0x44332211u, 0x00000055u}));
}

TEST(BitPack, ThreeBitCodeStraddlesTwoWords) {
  // 3-bit codes are octal digits. Codes 0..7,0,1 fill bits 0..29, so word 0 starts as
  // octal 1076543210 (last code first). Code 10 = 6 = 0b110 takes bits 30..32: its low
  // bits 0b10 set bit 31 of word 0, its top bit becomes bit 0 of word 1.
  const std::vector<uint8_t> codes = {0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 6};
  const uint32_t word0 = 01076543210u | (1u << 31);
  ASSERT_EQ(word0, 0x88FAC688u);
  EXPECT_EQ(pack_rows(codes, 1, 11, 3), (std::vector<uint32_t>{word0, 0x1u}));
  EXPECT_EQ(unpack_rows(std::vector<uint32_t>{word0, 0x1u}, 1, 11, 3), codes);
}

TEST(BitPack, RowsAreIndependentStreams) {
  // Two rows of five 4-bit codes: each row starts in a fresh word.
  const std::vector<uint8_t> codes = {1, 2, 3, 4, 5, 0xA, 0xB, 0xC, 0xD, 0xE};
  EXPECT_EQ(pack_rows(codes, 2, 5, 4), (std::vector<uint32_t>{0x00054321u, 0x000EDCBAu}));
}

TEST(BitPack, WordsPerRow) {
  EXPECT_EQ(packed_words_per_row(4, 128), 16);
  EXPECT_EQ(packed_words_per_row(3, 128), 12);
  EXPECT_EQ(packed_words_per_row(3, 11), 2);  // 33 bits
  EXPECT_EQ(packed_words_per_row(2, 1), 1);
  EXPECT_EQ(packed_words_per_row(8, 33), 9);
}

class BitPackRoundTrip : public ::testing::TestWithParam<int> {};

TEST_P(BitPackRoundTrip, RandomCodesAreBitExactAndPaddingIsZero) {
  const int bits = GetParam();
  constexpr int64_t kRows = 3;
  std::mt19937 rng(static_cast<uint32_t>(bits));
  std::uniform_int_distribution<int> code(0, (1 << bits) - 1);
  for (int64_t cols : {1, 7, 31, 33, 129}) {
    SCOPED_TRACE("cols " + std::to_string(cols));
    std::vector<uint8_t> codes(static_cast<size_t>(kRows * cols));
    for (auto& c : codes) c = static_cast<uint8_t>(code(rng));
    const std::vector<uint32_t> words = pack_rows(codes, kRows, cols, bits);
    const int64_t per_row = packed_words_per_row(bits, cols);
    ASSERT_EQ(words.size(), static_cast<size_t>(kRows * per_row));
    EXPECT_EQ(unpack_rows(words, kRows, cols, bits), codes);
    const int64_t used_in_last = (cols * bits) % 32;  // 0: the last word is full
    for (int64_t r = 0; r < kRows && used_in_last != 0; ++r)
      EXPECT_EQ(words[static_cast<size_t>((r + 1) * per_row - 1)] >> used_in_last, 0u) << "row " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Bits, BitPackRoundTrip, ::testing::Values(2, 3, 4, 8),
                         [](const auto& info) { return "bits" + std::to_string(info.param); });

TEST(BitPack, RejectsBadInput) {
  const std::vector<uint8_t> codes = {0, 1, 4};
  EXPECT_THROW(pack_rows(codes, 1, 3, 2), Error);                          // 4 does not fit in 2 bits
  EXPECT_THROW(pack_rows(codes, 1, 4, 4), Error);                          // size mismatch
  EXPECT_THROW(pack_rows(codes, 1, 3, 5), Error);                          // unsupported width
  EXPECT_THROW(unpack_rows(std::vector<uint32_t>{0, 0}, 1, 3, 4), Error);  // 3 codes need 1 word
}

}  // namespace
}  // namespace fsq
