// Block layouts follow ggml-common.h. Every multi-byte field is read with memcpy-style
// little-endian loads so blocks inside a mapping need no alignment.
#include "formats/gguf/dequantize.h"

#include <cstring>
#include <string>

#include "common/error.h"
#include "common/half.h"

namespace fsq {
namespace {

using u8 = uint8_t;

inline u8 byte_at(const std::byte* p, size_t i) { return static_cast<u8>(p[i]); }

inline uint16_t le16(const std::byte* p) {
  return static_cast<uint16_t>(byte_at(p, 0) | byte_at(p, 1) << 8);
}

inline uint32_t le32(const std::byte* p) {
  return static_cast<uint32_t>(byte_at(p, 0)) | static_cast<uint32_t>(byte_at(p, 1)) << 8 |
         static_cast<uint32_t>(byte_at(p, 2)) << 16 | static_cast<uint32_t>(byte_at(p, 3)) << 24;
}

inline float half_at(const std::byte* p) { return f16_to_f32(le16(p)); }

void row_f32(const std::byte* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits = le32(x + 4 * i);
    std::memcpy(&y[i], &bits, 4);
  }
}

void row_f16(const std::byte* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = half_at(x + 2 * i);
}

void row_bf16(const std::byte* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = bf16_to_f32(le16(x + 2 * i));
}

// Q8_0: {f16 d; i8 q[32]}; y = d * q.
void block_q8_0(const std::byte* b, float* y) {
  float d = half_at(b);
  for (int i = 0; i < 32; ++i) y[i] = d * static_cast<float>(static_cast<int8_t>(byte_at(b, 2 + i)));
}

// Q4_0: {f16 d; u8 qs[16]}; element j is the low nibble of qs[j], j+16 the high one;
// y = d * (q - 8).
void block_q4_0(const std::byte* b, float* y) {
  float d = half_at(b);
  for (int j = 0; j < 16; ++j) {
    u8 q = byte_at(b, 2 + j);
    y[j] = d * static_cast<float>((q & 0xF) - 8);
    y[j + 16] = d * static_cast<float>((q >> 4) - 8);
  }
}

// Q4_1: {f16 d; f16 m; u8 qs[16]}; y = d * q + m.
void block_q4_1(const std::byte* b, float* y) {
  float d = half_at(b), m = half_at(b + 2);
  for (int j = 0; j < 16; ++j) {
    u8 q = byte_at(b, 4 + j);
    y[j] = d * static_cast<float>(q & 0xF) + m;
    y[j + 16] = d * static_cast<float>(q >> 4) + m;
  }
}

// Q5_0/Q5_1 share the 5-bit code: bit j of the u32 qh is the high bit of element j.
inline int q5_code(u8 nibble, uint32_t qh, int j) { return nibble | static_cast<int>((qh >> j) & 1u) << 4; }

// Q5_0: {f16 d; u8 qh[4]; u8 qs[16]}; y = d * (q - 16).
void block_q5_0(const std::byte* b, float* y) {
  float d = half_at(b);
  uint32_t qh = le32(b + 2);
  for (int j = 0; j < 16; ++j) {
    u8 q = byte_at(b, 6 + j);
    y[j] = d * static_cast<float>(q5_code(q & 0xF, qh, j) - 16);
    y[j + 16] = d * static_cast<float>(q5_code(q >> 4, qh, j + 16) - 16);
  }
}

// Q5_1: {f16 d; f16 m; u8 qh[4]; u8 qs[16]}; y = d * q + m.
void block_q5_1(const std::byte* b, float* y) {
  float d = half_at(b), m = half_at(b + 2);
  uint32_t qh = le32(b + 4);
  for (int j = 0; j < 16; ++j) {
    u8 q = byte_at(b, 8 + j);
    y[j] = d * static_cast<float>(q5_code(q & 0xF, qh, j)) + m;
    y[j + 16] = d * static_cast<float>(q5_code(q >> 4, qh, j + 16)) + m;
  }
}

// Q2_K: {u8 scales[16]; u8 qs[64]; f16 d; f16 dmin}. Each scales byte is a 4-bit scale
// (low) and 4-bit min (high) for 16 elements. Each 128-element half uses 32 qs bytes;
// 2-bit field k of byte l holds element 32k + l of that half.
void block_q2_k(const std::byte* b, float* y) {
  const std::byte* qs = b + 16;
  float d = half_at(b + 80), dmin = half_at(b + 82);
  for (int half = 0; half < 2; ++half) {
    for (int k = 0; k < 4; ++k) {
      for (int l = 0; l < 32; ++l) {
        u8 sc = byte_at(b, 8 * half + 2 * k + l / 16);
        int q = (byte_at(qs, 32 * half + l) >> (2 * k)) & 3;
        y[128 * half + 32 * k + l] = d * static_cast<float>(sc & 0xF) * static_cast<float>(q) -
                                     dmin * static_cast<float>(sc >> 4);
      }
    }
  }
}

// Q3_K 6-bit scale s (0..15) from the 12 packed bytes: low 4 bits are the low nibble of
// byte s (s < 8) or the high nibble of byte s-8; the top 2 bits are field s/4 of byte 8 + s%4.
inline int q3_k_scale(const std::byte* sc, int s) {
  int low = s < 8 ? byte_at(sc, s) & 0xF : byte_at(sc, s - 8) >> 4;
  int high = (byte_at(sc, 8 + s % 4) >> (2 * (s / 4))) & 3;
  return (low | high << 4) - 32;
}

// Q3_K: {u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d}. Low 2 bits as in Q2_K; the high
// bit of element 32k + l of half h is bit 4h + k of hmask[l]; a clear bit subtracts 4.
void block_q3_k(const std::byte* b, float* y) {
  const std::byte* hmask = b;
  const std::byte* qs = b + 32;
  const std::byte* scales = b + 96;
  float d = half_at(b + 108);
  for (int half = 0; half < 2; ++half) {
    for (int k = 0; k < 4; ++k) {
      for (int l = 0; l < 32; ++l) {
        int s = q3_k_scale(scales, 8 * half + 2 * k + l / 16);
        int q = (byte_at(qs, 32 * half + l) >> (2 * k)) & 3;
        bool hi = (byte_at(hmask, l) >> (4 * half + k)) & 1;
        y[128 * half + 32 * k + l] = d * static_cast<float>(s) * static_cast<float>(q - (hi ? 0 : 4));
      }
    }
  }
}

// Q4_K/Q5_K 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes: j < 4 keep
// them in the low 6 bits of bytes j and j+4; j >= 4 put the low 4 bits in byte j+4 and
// borrow the top 2 bits of bytes j-4 (scale) and j (min).
inline void k4_scale_min(const std::byte* q, int j, int& sc, int& m) {
  if (j < 4) {
    sc = byte_at(q, j) & 63;
    m = byte_at(q, j + 4) & 63;
  } else {
    sc = (byte_at(q, j + 4) & 0xF) | (byte_at(q, j - 4) >> 6) << 4;
    m = (byte_at(q, j + 4) >> 4) | (byte_at(q, j) >> 6) << 4;
  }
}

// Q4_K: {f16 d; f16 dmin; u8 scales[12]; u8 qs[128]}. 8 sub-blocks of 32; each 64-element
// chunk c uses qs[32c..32c+32): low nibbles are sub-block 2c, high nibbles 2c+1.
void block_q4_k(const std::byte* b, float* y) {
  float d = half_at(b), dmin = half_at(b + 2);
  const std::byte* scales = b + 4;
  const std::byte* qs = b + 16;
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    k4_scale_min(scales, j, sc, m);
    int shift = 4 * (j % 2);
    for (int l = 0; l < 32; ++l) {
      int q = (byte_at(qs, 32 * (j / 2) + l) >> shift) & 0xF;
      y[32 * j + l] = d * static_cast<float>(sc) * static_cast<float>(q) - dmin * static_cast<float>(m);
    }
  }
}

// Q5_K: {f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}: Q4_K plus a fifth bit,
// bit j of qh[l] for element l of sub-block j.
void block_q5_k(const std::byte* b, float* y) {
  float d = half_at(b), dmin = half_at(b + 2);
  const std::byte* scales = b + 4;
  const std::byte* qh = b + 16;
  const std::byte* qs = b + 48;
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    k4_scale_min(scales, j, sc, m);
    int shift = 4 * (j % 2);
    for (int l = 0; l < 32; ++l) {
      int q = ((byte_at(qs, 32 * (j / 2) + l) >> shift) & 0xF) | ((byte_at(qh, l) >> j) & 1) << 4;
      y[32 * j + l] = d * static_cast<float>(sc) * static_cast<float>(q) - dmin * static_cast<float>(m);
    }
  }
}

// Q6_K: {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}. Per 128-element half h: element
// 32k + l (k 0..3, l 0..31) takes its low nibble from ql[64h + l + 32(k%2)] (k < 2 low,
// else high nibble), its top 2 bits from field k of qh[32h + l], and scale 8h + 2k + l/16.
void block_q6_k(const std::byte* b, float* y) {
  const std::byte* ql = b;
  const std::byte* qh = b + 128;
  const std::byte* scales = b + 192;
  float d = half_at(b + 208);
  for (int half = 0; half < 2; ++half) {
    for (int k = 0; k < 4; ++k) {
      for (int l = 0; l < 32; ++l) {
        int low = (byte_at(ql, 64 * half + l + 32 * (k % 2)) >> (4 * (k / 2))) & 0xF;
        int high = (byte_at(qh, 32 * half + l) >> (2 * k)) & 3;
        int q = (low | high << 4) - 32;
        auto sc = static_cast<int8_t>(byte_at(scales, 8 * half + 2 * k + l / 16));
        y[128 * half + 32 * k + l] = d * static_cast<float>(sc) * static_cast<float>(q);
      }
    }
  }
}

// IQ4_NL: {f16 d; u8 qs[16]}, nibbles laid out as in Q4_0, each an index into a fixed
// non-uniform table (iq4nl_levels); y = d * table[q].
void block_iq4_nl(const std::byte* b, float* y) {
  float d = half_at(b);
  const auto& levels = iq4nl_levels();
  for (int j = 0; j < 16; ++j) {
    u8 q = byte_at(b, 2 + j);
    y[j] = d * static_cast<float>(levels[q & 0xF]);
    y[j + 16] = d * static_cast<float>(levels[q >> 4]);
  }
}

using BlockFn = void (*)(const std::byte*, float*);

BlockFn block_fn(GgmlType t) {
  switch (t) {
    case GgmlType::Q8_0: return block_q8_0;
    case GgmlType::Q4_0: return block_q4_0;
    case GgmlType::Q4_1: return block_q4_1;
    case GgmlType::Q5_0: return block_q5_0;
    case GgmlType::Q5_1: return block_q5_1;
    case GgmlType::Q2_K: return block_q2_k;
    case GgmlType::Q3_K: return block_q3_k;
    case GgmlType::Q4_K: return block_q4_k;
    case GgmlType::Q5_K: return block_q5_k;
    case GgmlType::Q6_K: return block_q6_k;
    case GgmlType::IQ4_NL: return block_iq4_nl;
    default: return nullptr;
  }
}

}  // namespace

const std::array<int8_t, 16>& iq4nl_levels() {
  // ggml's kvalues_iq4nl: a 4-bit grid denser near zero, fitted to normally distributed weights.
  static constexpr std::array<int8_t, 16> kLevels = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                     1,    13,   25,  38,  53,  69,  89,  113};
  return kLevels;
}

bool can_dequantize(GgmlType t) {
  return t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16 || block_fn(t) != nullptr;
}

void dequantize_row(GgmlType t, const std::byte* src, float* dst, int64_t n) {
  const auto& info = ggml_type_info(t);
  const std::string where = "dequantize " + std::string(info.name);
  if (!can_dequantize(t)) throw Error(where, "no reference dequantizer for this type");
  if (n < 0 || n % info.block_size != 0)
    throw Error(where, "element count " + std::to_string(n) + " is not a multiple of the block size " +
                           std::to_string(info.block_size));
  switch (t) {
    case GgmlType::F32: return row_f32(src, dst, n);
    case GgmlType::F16: return row_f16(src, dst, n);
    case GgmlType::BF16: return row_bf16(src, dst, n);
    default: break;
  }
  BlockFn fn = block_fn(t);
  for (int64_t i = 0; i < n / info.block_size; ++i)
    fn(src + static_cast<size_t>(i) * info.type_size, dst + i * info.block_size);
}

}  // namespace fsq
