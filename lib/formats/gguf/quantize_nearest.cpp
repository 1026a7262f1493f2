// Block layouts as in quantize_blocks.cpp (ggml-common.h): fp16 d [, fp16 min] [, 32 high bits],
// then the low nibbles (element j in byte j's low half, element j + 16 in its high half), or
// 32 signed bytes for Q8_0.
#include "formats/gguf/quantize_nearest.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/error.h"
#include "common/half.h"

namespace fsq {
namespace {
// Named, since a unity build joins this file with others that have their own kBlock.
namespace nearest {

constexpr int kBlock = 32;

struct Grid {
  int bits = 0;       // 4, 5 or 8
  bool affine = false;
};

bool grid_of(GgmlType t, Grid* g) {
  switch (t) {
    case GgmlType::Q4_0: *g = {4, false}; return true;
    case GgmlType::Q4_1: *g = {4, true}; return true;
    case GgmlType::Q5_0: *g = {5, false}; return true;
    case GgmlType::Q5_1: *g = {5, true}; return true;
    case GgmlType::Q8_0: *g = {8, false}; return true;
    default: return false;
  }
}

void put_half(std::byte* p, float v) {
  const uint16_t h = f32_to_f16(v);
  p[0] = static_cast<std::byte>(h & 0xFF);
  p[1] = static_cast<std::byte>(h >> 8);
}

// Codes of one block: symmetric grids store v / d + 2^(bits-1), affine ones (v - min) / d,
// both rounded half up by truncating v + 0.5 (every such value is >= 0 here).
std::byte* round_block(const Grid& g, const float* x, std::byte* out, std::array<uint8_t, kBlock>& codes) {
  const int top = (1 << g.bits) - 1;
  float d = 0, offset = 0;
  if (g.affine) {
    const auto [lo, hi] = std::minmax_element(x, x + kBlock);
    offset = *lo;
    d = (*hi - *lo) / static_cast<float>(top);
  } else {
    float extreme = 0, magnitude = 0;
    for (int j = 0; j < kBlock; ++j)
      if (magnitude < std::fabs(x[j])) {
        magnitude = std::fabs(x[j]);
        extreme = x[j];
      }
    d = extreme / -static_cast<float>(1 << (g.bits - 1));
  }
  const float inverse = d != 0 ? 1.0f / d : 0.0f;
  put_half(out, d);
  out += 2;
  if (g.affine) {
    put_half(out, offset);
    out += 2;
  }
  const float shift = g.affine ? 0.5f : static_cast<float>(1 << (g.bits - 1)) + 0.5f;
  for (int j = 0; j < kBlock; ++j) {
    const float v = (g.affine ? x[j] - offset : x[j]) * inverse + shift;
    codes[j] = static_cast<uint8_t>(std::min(top, static_cast<int>(v)));
  }
  return out;
}

void round_block_q8(const float* x, std::byte* out) {
  float magnitude = 0;
  for (int j = 0; j < kBlock; ++j) magnitude = std::max(magnitude, std::fabs(x[j]));
  const float d = magnitude / 127.0f;
  const float inverse = d != 0 ? 1.0f / d : 0.0f;
  put_half(out, d);
  for (int j = 0; j < kBlock; ++j) out[2 + j] = static_cast<std::byte>(static_cast<int8_t>(std::round(x[j] * inverse)));
}

void pack_block(const Grid& g, const std::array<uint8_t, kBlock>& codes, std::byte* out) {
  if (g.bits == 5) {
    uint32_t high = 0;
    for (int j = 0; j < kBlock; ++j) high |= static_cast<uint32_t>((codes[j] >> 4) & 1u) << j;
    for (int k = 0; k < 4; ++k) out[k] = static_cast<std::byte>((high >> (8 * k)) & 0xFF);
    out += 4;
  }
  for (int j = 0; j < 16; ++j) out[j] = static_cast<std::byte>((codes[j] & 0xF) | (codes[j + 16] & 0xF) << 4);
}

}  // namespace nearest
}  // namespace

bool can_round_nearest(GgmlType t) {
  nearest::Grid g;
  return nearest::grid_of(t, &g);
}

void round_row_nearest(GgmlType t, std::span<const float> x, std::span<std::byte> dst) {
  const std::string where = "round " + std::string(ggml_type_name(t));
  nearest::Grid g;
  if (!nearest::grid_of(t, &g)) throw Error(where, "plain rounding covers Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 only");
  const auto n = static_cast<int64_t>(x.size());
  if (n % nearest::kBlock != 0)
    throw Error(where, "row length " + std::to_string(n) + " is not a multiple of the block size 32");
  const size_t block_bytes = ggml_type_info(t).type_size;
  if (dst.size() != block_bytes * static_cast<size_t>(n / nearest::kBlock))
    throw Error(where, "output buffer of " + std::to_string(dst.size()) + " bytes, need " +
                           std::to_string(block_bytes * static_cast<size_t>(n / nearest::kBlock)));
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) throw Error(where, "element " + std::to_string(i) + " is not finite");
  std::array<uint8_t, nearest::kBlock> codes{};
  for (int64_t b = 0; b < n / nearest::kBlock; ++b) {
    const float* xb = x.data() + b * nearest::kBlock;
    std::byte* out = dst.data() + static_cast<size_t>(b) * block_bytes;
    if (g.bits == 8) {
      nearest::round_block_q8(xb, out);
    } else {
      nearest::pack_block(g, codes, nearest::round_block(g, xb, out, codes));
    }
  }
}

}  // namespace fsq
