// Reference dequantizers on hand-built blocks. Each test chooses the codes, scales and
// mins, packs them by the ggml layout written out here, and computes the expected floats
// by the type's formula directly (never through the library). Two blocks per type with
// different scales check the block stride; every sub-block gets its own scale/min, with
// the extreme 6-bit values (0, 63) that exercise the packed high bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "formats/gguf/dequantize.h"
#include "formats/gguf/ggml_types.h"

namespace fsq::test {
namespace {

// f16 bit patterns of the scales used below, with their exact values.
struct Half {
  uint16_t bits;
  double value;
};
constexpr Half kD0 = {0x2E66, 0.0999755859375};  // a scale that is not a power of two
constexpr Half kD1 = {0xBA00, -0.75};
constexpr Half kMin0 = {0x2C00, 0.0625};
constexpr Half kMin1 = {0x3E00, 1.5};
constexpr Half kM0 = {0xBC00, -1.0};  // Q4_1/Q5_1 offsets
constexpr Half kM1 = {0x3600, 0.375};

// Deterministic codes: a small LCG so every test gets varied, reproducible values.
class Rng {
 public:
  explicit Rng(uint32_t seed) : s_(seed) {}
  int next(int lo, int hi) {  // inclusive
    s_ = s_ * 1664525u + 1013904223u;
    return lo + static_cast<int>((s_ >> 8) % static_cast<uint32_t>(hi - lo + 1));
  }

 private:
  uint32_t s_;
};

using Block = std::vector<uint8_t>;

void put16(Block& b, size_t at, uint16_t v) {
  b[at] = static_cast<uint8_t>(v & 0xff);
  b[at + 1] = static_cast<uint8_t>(v >> 8);
}

// Runs the library on the concatenated blocks and compares with `expected`.
void check(GgmlType t, const std::vector<Block>& blocks, const std::vector<double>& expected) {
  std::vector<std::byte> bytes;
  for (const auto& b : blocks) {
    ASSERT_EQ(b.size(), ggml_type_info(t).type_size);
    for (uint8_t x : b) bytes.push_back(static_cast<std::byte>(x));
  }
  std::vector<float> got(expected.size(), NAN);
  dequantize_row(t, bytes.data(), got.data(), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i)
    ASSERT_NEAR(got[i], expected[i], 1e-6 * std::fabs(expected[i]) + 1e-7)
        << ggml_type_name(t) << " element " << i << " (block " << i / ggml_type_info(t).block_size << ")";
}

TEST(Dequantize, F32F16BF16) {
  // f32: copied as is, subnormals and large values included.
  const float f32[] = {0.0f, -1.25f, 3.0e38f, 1.0e-40f};
  std::vector<std::byte> raw32(sizeof f32);
  std::memcpy(raw32.data(), f32, sizeof f32);
  std::vector<float> out(4);
  dequantize_row(GgmlType::F32, raw32.data(), out.data(), 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], f32[i]);

  // f16: 1, -2, largest normal, smallest subnormal, -0.
  Block b16(10);
  const uint16_t h[] = {0x3C00, 0xC000, 0x7BFF, 0x0001, 0x8000};
  for (int i = 0; i < 5; ++i) put16(b16, 2 * i, h[i]);
  std::vector<std::byte> r16(10);
  std::memcpy(r16.data(), b16.data(), 10);
  std::vector<float> o16(5);
  dequantize_row(GgmlType::F16, r16.data(), o16.data(), 5);
  EXPECT_EQ(o16[0], 1.0f);
  EXPECT_EQ(o16[1], -2.0f);
  EXPECT_EQ(o16[2], 65504.0f);
  EXPECT_EQ(o16[3], std::ldexp(1.0f, -24));
  EXPECT_TRUE(o16[4] == 0.0f && std::signbit(o16[4]));

  // bf16: the top half of an f32.
  const uint16_t bf[] = {0x3F80, 0xC040, 0x4049};
  std::vector<std::byte> rbf(6);
  for (int i = 0; i < 3; ++i) {
    rbf[2 * i] = static_cast<std::byte>(bf[i] & 0xff);
    rbf[2 * i + 1] = static_cast<std::byte>(bf[i] >> 8);
  }
  std::vector<float> obf(3);
  dequantize_row(GgmlType::BF16, rbf.data(), obf.data(), 3);
  EXPECT_EQ(obf[0], 1.0f);
  EXPECT_EQ(obf[1], -3.0f);
  EXPECT_EQ(obf[2], 3.140625f);
}

// Q8_0: {f16 d; int8 q[32]}, y = d*q.
TEST(Dequantize, Q8_0) {
  Rng rng(1);
  std::vector<Block> blocks;
  std::vector<double> expected;
  for (Half d : {kD0, kD1}) {
    Block b(34);
    put16(b, 0, d.bits);
    for (int i = 0; i < 32; ++i) {
      int q = i == 0 ? -128 : i == 31 ? 127 : rng.next(-128, 127);
      b[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(q));
      expected.push_back(d.value * q);
    }
    blocks.push_back(b);
  }
  check(GgmlType::Q8_0, blocks, expected);
}

// Q4_0/Q4_1: element i < 16 is the low nibble of qs[i], element i >= 16 the high
// nibble of qs[i - 16]. Q4_0: y = d*(q-8); Q4_1: y = d*q + m.
void q4_legacy(GgmlType t) {
  const bool has_m = t == GgmlType::Q4_1;
  Rng rng(2);
  std::vector<Block> blocks;
  std::vector<double> expected;
  for (int blk = 0; blk < 2; ++blk) {
    Half d = blk ? kD1 : kD0, m = blk ? kM1 : kM0;
    const size_t qs = has_m ? 4 : 2;
    Block b(qs + 16);
    put16(b, 0, d.bits);
    if (has_m) put16(b, 2, m.bits);
    for (int i = 0; i < 32; ++i) {
      int q = i == 0 ? 0 : i == 31 ? 15 : rng.next(0, 15);
      b[qs + i % 16] |= static_cast<uint8_t>(i < 16 ? q : q << 4);
      expected.push_back(has_m ? d.value * q + m.value : d.value * (q - 8));
    }
    blocks.push_back(b);
  }
  check(t, blocks, expected);
}
TEST(Dequantize, Q4_0) { q4_legacy(GgmlType::Q4_0); }
TEST(Dequantize, Q4_1) { q4_legacy(GgmlType::Q4_1); }

// Q5_0/Q5_1: as Q4 plus a fifth bit: bit i of the little-endian u32 qh is bit 4 of
// element i. Q5_0: y = d*(q-16); Q5_1: y = d*q + m.
void q5_legacy(GgmlType t) {
  const bool has_m = t == GgmlType::Q5_1;
  Rng rng(3);
  std::vector<Block> blocks;
  std::vector<double> expected;
  for (int blk = 0; blk < 2; ++blk) {
    Half d = blk ? kD1 : kD0, m = blk ? kM1 : kM0;
    const size_t qh = has_m ? 4 : 2, qs = qh + 4;
    Block b(qs + 16);
    put16(b, 0, d.bits);
    if (has_m) put16(b, 2, m.bits);
    for (int i = 0; i < 32; ++i) {
      int q = i == 15 ? 31 : i == 16 ? 16 : i == 17 ? 15 : rng.next(0, 31);
      b[qs + i % 16] |= static_cast<uint8_t>(i < 16 ? (q & 15) : (q & 15) << 4);
      b[qh + i / 8] |= static_cast<uint8_t>((q >> 4) << (i % 8));
      expected.push_back(has_m ? d.value * q + m.value : d.value * (q - 16));
    }
    blocks.push_back(b);
  }
  check(t, blocks, expected);
}
TEST(Dequantize, Q5_0) { q5_legacy(GgmlType::Q5_0); }
TEST(Dequantize, Q5_1) { q5_legacy(GgmlType::Q5_1); }

// K-quant element i of a 256-block: half h = i/128, within it k = (i%128)/32 (the 2-bit
// field or nibble), l = i%32 (the byte). Scales of 16-element groups are indexed i/16.
struct KPos {
  int h, k, l;
};
KPos kpos(int i) { return {i / 128, (i % 128) / 32, i % 32}; }

// Q2_K: {u8 scales[16] (low nibble scale, high nibble min); u8 qs[64]; f16 d; f16 dmin}.
// Element i is the 2-bit field k of qs[32h + l]; y = d*sc[i/16]*q - dmin*min[i/16].
TEST(Dequantize, Q2_K) {
  Rng rng(4);
  std::vector<Block> blocks;
  std::vector<double> expected;
  for (int blk = 0; blk < 2; ++blk) {
    Half d = blk ? kD1 : kD0, dmin = blk ? kMin1 : kMin0;
    Block b(84);
    put16(b, 80, d.bits);
    put16(b, 82, dmin.bits);
    int sc[16], mn[16];
    for (int s = 0; s < 16; ++s) {
      sc[s] = s == 0 ? 15 : (s * 7 + blk) % 16;
      mn[s] = s == 1 ? 15 : (s * 5 + 3 * blk) % 16;
      b[s] = static_cast<uint8_t>(sc[s] | mn[s] << 4);
    }
    for (int i = 0; i < 256; ++i) {
      int q = rng.next(0, 3);
      KPos p = kpos(i);
      b[16 + 32 * p.h + p.l] |= static_cast<uint8_t>(q << (2 * p.k));
      expected.push_back(d.value * sc[i / 16] * q - dmin.value * mn[i / 16]);
    }
    blocks.push_back(b);
  }
  check(GgmlType::Q2_K, blocks, expected);
}

// Q3_K: {u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d}. q in [-4, 3]: low 2 bits as in
// Q2_K, the high bit is bit 4h + k of hmask[l] and a clear bit means "minus 4". Scale s
// (6 bits, biased by 32): low 4 bits in byte s (s < 8, low nibble) or byte s-8 (high
// nibble); top 2 bits in byte 8 + s%4 at bit 2*(s/4). y = d*(scale-32)*q.
TEST(Dequantize, Q3_K) {
  Rng rng(5);
  std::vector<Block> blocks;
  std::vector<double> expected;
  for (int blk = 0; blk < 2; ++blk) {
    Half d = blk ? kD1 : kD0;
    Block b(110);
    put16(b, 108, d.bits);
    int sc[16];
    for (int s = 0; s < 16; ++s) {
      sc[s] = s == 3 ? 63 : s == 12 ? 0 : s == 9 ? 32 : (s * 23 + 11 * blk + 5) % 64;
      b[96 + (s < 8 ? s : s - 8)] |= static_cast<uint8_t>(s < 8 ? (sc[s] & 15) : (sc[s] & 15) << 4);
      b[96 + 8 + s % 4] |= static_cast<uint8_t>((sc[s] >> 4) << (2 * (s / 4)));
    }
    for (int i = 0; i < 256; ++i) {
      int q = i % 37 == 0 ? -4 : i % 41 == 0 ? 3 : rng.next(-4, 3);
      KPos p = kpos(i);
      int low = q >= 0 ? q : q + 4;
      b[32 + 32 * p.h + p.l] |= static_cast<uint8_t>(low << (2 * p.k));
      if (q >= 0) b[p.l] |= static_cast<uint8_t>(1 << (4 * p.h + p.k));
      expected.push_back(d.value * (sc[i / 16] - 32) * q);
    }
    blocks.push_back(b);
  }
  check(GgmlType::Q3_K, blocks, expected);
}

// Q4_K/Q5_K 6-bit scales and mins of the 8 sub-blocks of 32, packed in 12 bytes:
// j < 4: byte j = sc[j] | (sc[j+4] >> 4) << 6, byte j+4 = mn[j] | (mn[j+4] >> 4) << 6,
// byte j+8 = (sc[j+4] & 15) | (mn[j+4] & 15) << 4.
void pack_k4_scales(Block& b, size_t at, const int* sc, const int* mn) {
  for (int j = 0; j < 4; ++j) {
    b[at + j] = static_cast<uint8_t>(sc[j] | (sc[j + 4] >> 4) << 6);
    b[at + j + 4] = static_cast<uint8_t>(mn[j] | (mn[j + 4] >> 4) << 6);
    b[at + j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | (mn[j + 4] & 15) << 4);
  }
}

// Scales/mins per sub-block: extremes in every position class (j < 4 and j >= 4).
void k4_params(int blk, int* sc, int* mn) {
  const int s0[8] = {63, 1, 40, 17, 63, 0, 49, 22};
  const int m0[8] = {0, 63, 5, 33, 48, 63, 1, 30};
  for (int j = 0; j < 8; ++j) {
    sc[j] = blk ? s0[7 - j] : s0[j];
    mn[j] = blk ? m0[(j + 3) % 8] : m0[j];
  }
}

// Q4_K: {f16 d; f16 dmin; u8 scales[12]; u8 qs[128]}. Sub-block j = i/32, element l =
// i%32 is nibble j%2 of qs[32*(j/2) + l]; y = d*sc[j]*q - dmin*mn[j].
// Q5_K: {f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}: bit 4 of q is bit j of qh[l].
void k4_family(GgmlType t) {
  const bool five = t == GgmlType::Q5_K;
  const size_t qh = 16, qs = five ? 48 : 16;
  Rng rng(6);
  std::vector<Block> blocks;
  std::vector<double> expected;
  for (int blk = 0; blk < 2; ++blk) {
    Half d = blk ? kD1 : kD0, dmin = blk ? kMin1 : kMin0;
    Block b(five ? 176 : 144);
    put16(b, 0, d.bits);
    put16(b, 2, dmin.bits);
    int sc[8], mn[8];
    k4_params(blk, sc, mn);
    pack_k4_scales(b, 4, sc, mn);
    for (int i = 0; i < 256; ++i) {
      int j = i / 32, l = i % 32;
      int q = l == 0 ? 0 : l == 31 ? (five ? 31 : 15) : rng.next(0, five ? 31 : 15);
      b[qs + 32 * (j / 2) + l] |= static_cast<uint8_t>((q & 15) << (4 * (j % 2)));
      if (five) b[qh + l] |= static_cast<uint8_t>((q >> 4) << j);
      expected.push_back(d.value * sc[j] * q - dmin.value * mn[j]);
    }
    blocks.push_back(b);
  }
  check(t, blocks, expected);
}
TEST(Dequantize, Q4_K) { k4_family(GgmlType::Q4_K); }
TEST(Dequantize, Q5_K) { k4_family(GgmlType::Q5_K); }

// Q6_K: {u8 ql[128]; u8 qh[64]; int8 scales[16]; f16 d}. q in [-32, 31] stored as q+32:
// low 4 bits in nibble k/2 of ql[64h + 32*(k%2) + l], top 2 bits in field k of
// qh[32h + l]. y = d*scales[i/16]*q with signed 8-bit scales.
TEST(Dequantize, Q6_K) {
  Rng rng(7);
  std::vector<Block> blocks;
  std::vector<double> expected;
  for (int blk = 0; blk < 2; ++blk) {
    Half d = blk ? kD1 : kD0;
    Block b(210);
    put16(b, 208, d.bits);
    int sc[16];
    for (int s = 0; s < 16; ++s) {
      sc[s] = s == 0 ? -128 : s == 15 ? 127 : s == 7 ? -1 : (s * 29 + 13 * blk) % 256 - 128;
      b[192 + s] = static_cast<uint8_t>(static_cast<int8_t>(sc[s]));
    }
    for (int i = 0; i < 256; ++i) {
      int q = i % 31 == 0 ? -32 : i % 43 == 0 ? 31 : rng.next(-32, 31);
      KPos p = kpos(i);
      int raw = q + 32;
      b[64 * p.h + 32 * (p.k % 2) + p.l] |= static_cast<uint8_t>((raw & 15) << (4 * (p.k / 2)));
      b[128 + 32 * p.h + p.l] |= static_cast<uint8_t>((raw >> 4) << (2 * p.k));
      expected.push_back(d.value * sc[i / 16] * q);
    }
    blocks.push_back(b);
  }
  check(GgmlType::Q6_K, blocks, expected);
}

TEST(Dequantize, RejectsUnsupportedTypeAndPartialBlocks) {
  std::vector<std::byte> buf(1024);
  std::vector<float> out(256);
  EXPECT_FALSE(can_dequantize(GgmlType::Q8_K));
  EXPECT_FALSE(can_dequantize(GgmlType::IQ2_XXS));
  EXPECT_TRUE(can_dequantize(GgmlType::Q6_K));
  EXPECT_THROW(dequantize_row(GgmlType::Q8_K, buf.data(), out.data(), 256), Error);
  try {
    dequantize_row(GgmlType::Q4_K, buf.data(), out.data(), 100);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a multiple of the block size 256"), std::string::npos) << e.what();
  }
  EXPECT_THROW(dequantize_row(GgmlType::F32, buf.data(), out.data(), -1), Error);
  dequantize_row(GgmlType::Q4_K, buf.data(), out.data(), 0);  // empty row is fine
}

// Block geometry against ggml-common.h's static asserts.
TEST(GgmlTypes, TableMatchesGgml) {
  struct Row {
    GgmlType t;
    const char* name;
    int64_t block;
    size_t bytes;
  };
  const Row rows[] = {{GgmlType::F32, "F32", 1, 4},        {GgmlType::F16, "F16", 1, 2},
                      {GgmlType::BF16, "BF16", 1, 2},      {GgmlType::Q4_0, "Q4_0", 32, 18},
                      {GgmlType::Q4_1, "Q4_1", 32, 20},    {GgmlType::Q5_0, "Q5_0", 32, 22},
                      {GgmlType::Q5_1, "Q5_1", 32, 24},    {GgmlType::Q8_0, "Q8_0", 32, 34},
                      {GgmlType::Q8_1, "Q8_1", 32, 36},    {GgmlType::Q2_K, "Q2_K", 256, 84},
                      {GgmlType::Q3_K, "Q3_K", 256, 110},  {GgmlType::Q4_K, "Q4_K", 256, 144},
                      {GgmlType::Q5_K, "Q5_K", 256, 176},  {GgmlType::Q6_K, "Q6_K", 256, 210},
                      {GgmlType::Q8_K, "Q8_K", 256, 292},  {GgmlType::IQ2_XXS, "IQ2_XXS", 256, 66},
                      {GgmlType::IQ2_XS, "IQ2_XS", 256, 74}, {GgmlType::IQ3_XXS, "IQ3_XXS", 256, 98},
                      {GgmlType::IQ1_S, "IQ1_S", 256, 50}, {GgmlType::IQ4_NL, "IQ4_NL", 32, 18},
                      {GgmlType::IQ3_S, "IQ3_S", 256, 110}, {GgmlType::IQ2_S, "IQ2_S", 256, 82},
                      {GgmlType::IQ4_XS, "IQ4_XS", 256, 136}, {GgmlType::IQ1_M, "IQ1_M", 256, 56},
                      {GgmlType::TQ1_0, "TQ1_0", 256, 54}, {GgmlType::TQ2_0, "TQ2_0", 256, 66},
                      {GgmlType::MXFP4, "MXFP4", 32, 17},  {GgmlType::I8, "I8", 1, 1},
                      {GgmlType::I16, "I16", 1, 2},        {GgmlType::I32, "I32", 1, 4},
                      {GgmlType::I64, "I64", 1, 8},        {GgmlType::F64, "F64", 1, 8}};
  EXPECT_EQ(ggml_types().size(), std::size(rows));
  for (const Row& r : rows) {
    const GgmlTypeInfo& info = ggml_type_info(r.t);
    EXPECT_EQ(info.name, r.name);
    EXPECT_EQ(info.block_size, r.block) << r.name;
    EXPECT_EQ(info.type_size, r.bytes) << r.name;
    EXPECT_EQ(ggml_type_from_name(r.name), r.t);
  }
  for (uint32_t retired : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 40u, 1000u})
    EXPECT_EQ(find_ggml_type(retired), nullptr) << retired;
  EXPECT_EQ(ggml_nbytes(GgmlType::Q4_1, 64), 40u);
  EXPECT_FALSE(ggml_nbytes(GgmlType::Q4_1, 48).has_value());
  EXPECT_FALSE(ggml_nbytes(GgmlType::F64, int64_t{1} << 62).has_value());
}

}  // namespace
}  // namespace fsq::test
