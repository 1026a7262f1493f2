// Block layouts follow ggml-common.h (the same ones dequantize.cpp reads). Every candidate
// scale is rounded to fp16 before its codes are chosen and its error measured, so the search
// compares the blocks exactly as they will decode. Errors accumulate in double.
#include "formats/gguf/quantize_blocks.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "common/error.h"
#include "common/half.h"
#include "formats/gguf/dequantize.h"

namespace fsq {
namespace {

constexpr int kBlock = 32;  // elements per block of every type written here

using Codes = std::array<uint8_t, kBlock>;

float round_f16(float v) { return f16_to_f32(f32_to_f16(v)); }

void put_f16(std::byte* p, float v) {
  uint16_t h = f32_to_f16(v);
  p[0] = static_cast<std::byte>(h & 0xFF);
  p[1] = static_cast<std::byte>(h >> 8);
}

struct Block {
  const float* x;
  const float* w;  // never null: all ones when the caller gave no importance
};

// ---- scale-only types: y = d * level[code] -------------------------------------------

struct Codebook {
  std::array<int, 256> levels{};  // ascending
  int count = 0;
  bool consecutive = false;  // levels[i] = levels[0] + i: rounding finds the nearest

  // Index of the level nearest to v (ties to the lower level for a table).
  int nearest(float v) const {
    if (consecutive) {
      float r = std::nearbyint(v);
      r = std::clamp(r, static_cast<float>(levels[0]), static_cast<float>(levels[count - 1]));
      return static_cast<int>(r) - levels[0];
    }
    const int* first = levels.data();
    int i = static_cast<int>(std::lower_bound(first, first + count, v, [](int l, float t) { return l < t; }) - first);
    if (i == 0) return 0;
    if (i == count) return count - 1;
    return (v - static_cast<float>(levels[i - 1]) <= static_cast<float>(levels[i]) - v) ? i - 1 : i;
  }
};

Codebook consecutive_codebook(int lo, int hi) {
  Codebook cb;
  cb.count = hi - lo + 1;
  for (int i = 0; i < cb.count; ++i) cb.levels[i] = lo + i;
  cb.consecutive = true;
  return cb;
}

Codebook table_codebook() {
  Codebook cb;
  const auto& levels = iq4nl_levels();
  cb.count = static_cast<int>(levels.size());
  for (int i = 0; i < cb.count; ++i) cb.levels[i] = levels[i];
  return cb;
}

struct ScaleFit {
  float d = 0;
  Codes codes{};
  double err = std::numeric_limits<double>::infinity();
};

// Codes nearest to x / d for an fp16-exact d, and their weighted error.
ScaleFit fit_scale(const Block& b, const Codebook& cb, float d) {
  ScaleFit f;
  f.d = d;
  f.err = 0;
  for (int i = 0; i < kBlock; ++i) {
    int q = cb.nearest(d != 0 ? b.x[i] / d : 0.0f);
    f.codes[i] = static_cast<uint8_t>(q);
    double e = static_cast<double>(b.x[i]) - static_cast<double>(d * static_cast<float>(cb.levels[q]));
    f.err += static_cast<double>(b.w[i]) * e * e;
  }
  return f;
}

// Weighted least-squares scale for fixed codes: sum w x l / sum w l^2.
float refit_scale(const Block& b, const Codebook& cb, const Codes& codes) {
  double num = 0, den = 0;
  for (int i = 0; i < kBlock; ++i) {
    double l = cb.levels[codes[i]];
    num += b.w[i] * b.x[i] * l;
    den += b.w[i] * l * l;
  }
  return den > 0 ? static_cast<float>(num / den) : 0.0f;
}

// Candidates map the largest-magnitude element onto either end level, stretched by up to
// +-10 % (the plain-rounding scale, max / end, is among them), each then refitted once by
// least squares on its codes.
ScaleFit search_scale(const Block& b, const Codebook& cb) {
  int imax = 0;
  for (int i = 1; i < kBlock; ++i)
    if (std::fabs(b.x[i]) > std::fabs(b.x[imax])) imax = i;
  const float xm = b.x[imax];
  ScaleFit best = fit_scale(b, cb, 0.0f);
  if (xm == 0) return best;
  auto consider = [&](float d) {
    d = round_f16(d);
    if (d == 0 || !std::isfinite(d)) return;
    ScaleFit f = fit_scale(b, cb, d);
    if (f.err < best.err) best = f;
    float refit = round_f16(refit_scale(b, cb, f.codes));
    if (refit == 0 || !std::isfinite(refit) || refit == d) return;
    ScaleFit g = fit_scale(b, cb, refit);
    if (g.err < best.err) best = g;
  };
  for (int end : {cb.levels[0], cb.levels[cb.count - 1]}) {
    if (end == 0) continue;
    for (int k = -8; k <= 8; ++k) consider(xm / (static_cast<float>(end) * (1.0f + 0.0125f * static_cast<float>(k))));
  }
  return best;
}

// ---- affine types: y = d * code + m, code in [0, n] ----------------------------------

struct AffineFit {
  float d = 0, m = 0;
  Codes codes{};
  double err = std::numeric_limits<double>::infinity();
};

AffineFit fit_affine(const Block& b, int n, float d, float m) {
  AffineFit f;
  f.d = d;
  f.m = m;
  f.err = 0;
  for (int i = 0; i < kBlock; ++i) {
    float r = d != 0 ? std::nearbyint((b.x[i] - m) / d) : 0.0f;
    int q = static_cast<int>(std::clamp(r, 0.0f, static_cast<float>(n)));
    f.codes[i] = static_cast<uint8_t>(q);
    double e = static_cast<double>(b.x[i]) - static_cast<double>(d * static_cast<float>(q) + m);
    f.err += static_cast<double>(b.w[i]) * e * e;
  }
  return f;
}

// Starts from the block's [min, max] range shrunk by 0..20 % at either end (plain rounding
// is the unshrunk start), then alternates nearest codes and the weighted least-squares
// (d, m) for those codes, twice.
AffineFit search_affine(const Block& b, int n) {
  float mn = b.x[0], mx = b.x[0];
  for (int i = 1; i < kBlock; ++i) {
    mn = std::min(mn, b.x[i]);
    mx = std::max(mx, b.x[i]);
  }
  AffineFit best = fit_affine(b, n, 0.0f, round_f16(mn));
  const float range = mx - mn;
  if (range == 0) return best;
  constexpr std::array<float, 5> kShrink = {0.0f, 0.05f, 0.1f, 0.15f, 0.2f};
  for (float a : kShrink) {
    for (float c : kShrink) {
      float lo = mn + a * range, hi = mx - c * range;
      if (hi <= lo) continue;
      float d = (hi - lo) / static_cast<float>(n), m = lo;
      for (int it = 0; it < 3; ++it) {
        d = round_f16(d);
        m = round_f16(m);
        if (d == 0 || !std::isfinite(d) || !std::isfinite(m)) break;
        AffineFit f = fit_affine(b, n, d, m);
        if (f.err < best.err) best = f;
        double sw = 0, sq = 0, sqq = 0, sx = 0, sqx = 0;
        for (int i = 0; i < kBlock; ++i) {
          double w = b.w[i], q = f.codes[i], x = b.x[i];
          sw += w;
          sq += w * q;
          sqq += w * q * q;
          sx += w * x;
          sqx += w * q * x;
        }
        double det = sqq * sw - sq * sq;
        if (!(det > 1e-12 * sqq * sw)) break;  // all codes equal: (d, m) not identified
        d = static_cast<float>((sqx * sw - sq * sx) / det);
        m = static_cast<float>((sqq * sx - sq * sqx) / det);
      }
    }
  }
  return best;
}

// ---- packing --------------------------------------------------------------------------

// Element j in the low nibble of byte j, element j + 16 in the high nibble (Q4_0 .. IQ4_NL).
void pack_nibbles(const Codes& codes, std::byte* qs) {
  for (int j = 0; j < 16; ++j)
    qs[j] = static_cast<std::byte>((codes[j] & 0xF) | (codes[j + 16] & 0xF) << 4);
}

// Bit j of the little-endian u32 is bit 4 of element j's 5-bit code (Q5_0, Q5_1).
void pack_high_bits(const Codes& codes, std::byte* qh) {
  uint32_t bits = 0;
  for (int j = 0; j < kBlock; ++j) bits |= static_cast<uint32_t>((codes[j] >> 4) & 1u) << j;
  for (int k = 0; k < 4; ++k) qh[k] = static_cast<std::byte>((bits >> (8 * k)) & 0xFF);
}

void write_scale_block(GgmlType t, const ScaleFit& f, const Codebook& cb, std::byte* out) {
  put_f16(out, f.d);
  Codes stored = f.codes;  // codebook index -> stored code
  switch (t) {
    case GgmlType::Q8_0:
      for (int i = 0; i < kBlock; ++i) out[2 + i] = static_cast<std::byte>(static_cast<int8_t>(cb.levels[f.codes[i]]));
      return;
    case GgmlType::Q5_0:
      pack_high_bits(stored, out + 2);
      pack_nibbles(stored, out + 6);
      return;
    default:  // Q4_0 (index = q + 8) and IQ4_NL (index into the table) store the index
      pack_nibbles(stored, out + 2);
      return;
  }
}

void write_affine_block(GgmlType t, const AffineFit& f, std::byte* out) {
  put_f16(out, f.d);
  put_f16(out + 2, f.m);
  if (t == GgmlType::Q5_1) {
    pack_high_bits(f.codes, out + 4);
    pack_nibbles(f.codes, out + 8);
  } else {
    pack_nibbles(f.codes, out + 4);
  }
}

const Codebook* codebook_for(GgmlType t) {
  static const Codebook q8 = consecutive_codebook(-127, 127);
  static const Codebook q4 = consecutive_codebook(-8, 7);
  static const Codebook q5 = consecutive_codebook(-16, 15);
  static const Codebook iq4 = table_codebook();
  switch (t) {
    case GgmlType::Q8_0: return &q8;
    case GgmlType::Q4_0: return &q4;
    case GgmlType::Q5_0: return &q5;
    case GgmlType::IQ4_NL: return &iq4;
    default: return nullptr;
  }
}

int affine_max_code(GgmlType t) {
  switch (t) {
    case GgmlType::Q4_1: return 15;
    case GgmlType::Q5_1: return 31;
    default: return 0;
  }
}

}  // namespace

bool can_quantize_gguf(GgmlType t) { return codebook_for(t) != nullptr || affine_max_code(t) != 0; }

void quantize_row_gguf(GgmlType t, std::span<const float> x, std::span<const float> importance,
                       std::span<std::byte> dst, std::span<float> reconstruction) {
  const auto& info = ggml_type_info(t);
  const std::string where = "quantize " + std::string(info.name);
  if (!can_quantize_gguf(t)) throw Error(where, "no quantizer for this type");
  const auto n = static_cast<int64_t>(x.size());
  if (n % kBlock != 0)
    throw Error(where, "row length " + std::to_string(n) + " is not a multiple of the block size 32");
  if (!importance.empty() && importance.size() != x.size())
    throw Error(where, "importance has " + std::to_string(importance.size()) + " weights for " + std::to_string(n) +
                           " elements");
  if (dst.size() != *ggml_nbytes(t, n))
    throw Error(where, "output buffer of " + std::to_string(dst.size()) + " bytes, need " +
                           std::to_string(*ggml_nbytes(t, n)));
  if (!reconstruction.empty() && reconstruction.size() != x.size())
    throw Error(where, "reconstruction buffer has the wrong length");
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) throw Error(where, "element " + std::to_string(i) + " is not finite");

  const Codebook* cb = codebook_for(t);
  const int n_affine = affine_max_code(t);
  std::array<float, kBlock> ones;
  ones.fill(1.0f);
  for (int64_t blk = 0; blk < n / kBlock; ++blk) {
    const float* xb = x.data() + blk * kBlock;
    const float* wb = ones.data();
    if (!importance.empty()) {
      const float* iw = importance.data() + blk * kBlock;
      bool any = false;
      for (int i = 0; i < kBlock; ++i) {
        if (!(iw[i] >= 0) || !std::isfinite(iw[i]))
          throw Error(where, "importance weight " + std::to_string(blk * kBlock + i) + " is negative or not finite");
        any = any || iw[i] > 0;
      }
      if (any) wb = iw;
    }
    const Block b{xb, wb};
    std::byte* out = dst.data() + blk * info.type_size;
    float* y = reconstruction.empty() ? nullptr : reconstruction.data() + blk * kBlock;
    if (cb != nullptr) {
      ScaleFit f = search_scale(b, *cb);
      write_scale_block(t, f, *cb, out);
      if (y != nullptr)
        for (int i = 0; i < kBlock; ++i) y[i] = f.d * static_cast<float>(cb->levels[f.codes[i]]);
    } else {
      AffineFit f = search_affine(b, n_affine);
      write_affine_block(t, f, out);
      if (y != nullptr)
        for (int i = 0; i < kBlock; ++i) y[i] = f.d * static_cast<float>(f.codes[i]) + f.m;
    }
  }
}

}  // namespace fsq
