// K-quants: a 256-element super-block of sub-blocks (16 or 32 elements), each with an
// integer scale (and min) in units of the super-block's fp16 d (and dmin). Layouts follow
// ggml-common.h, as dequantize.cpp reads them.
//
// Fit: each sub-block's real-valued scale (and min) by the weighted searches of block_fit.h;
// d (dmin) maps the largest onto the top integer; then each sub-block tries its rounded
// integer scale and min +-1 with the nearest codes for each, keeping the least weighted
// error. Reconstructions use the dequantizer's exact float expressions.
#include "formats/gguf/quantize_kquants.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include "common/error.h"
#include "formats/gguf/block_fit.h"

namespace fsq {
namespace {

using namespace gguf_fit;

constexpr int kSuper = 256;

struct KSpec {
  int sub = 16;         // elements per sub-block
  bool affine = false;  // y = d*sc*q - dmin*m (codes 0..code_max), else y = d*sc*level
  int code_max = 0;     // affine codes
  int level_lo = 0, level_hi = 0;  // symmetric levels
  int scale_lo = 0, scale_hi = 0;  // integer sub-block scales (and mins, affine: 0..scale_hi)
  const Codebook* levels = nullptr;  // symmetric: level_lo..level_hi
};

const KSpec* spec_of(GgmlType t) {
  static const Codebook q3_levels = consecutive_codebook(-4, 3), q6_levels = consecutive_codebook(-32, 31);
  static const KSpec q2{16, true, 3, 0, 0, 0, 15, nullptr};
  static const KSpec q3{16, false, 0, -4, 3, -32, 31, &q3_levels};
  static const KSpec q4{32, true, 15, 0, 0, 0, 63, nullptr};
  static const KSpec q5{32, true, 31, 0, 0, 0, 63, nullptr};
  static const KSpec q6{16, false, 0, -32, 31, -128, 127, &q6_levels};
  switch (t) {
    case GgmlType::Q2_K: return &q2;
    case GgmlType::Q3_K: return &q3;
    case GgmlType::Q4_K: return &q4;
    case GgmlType::Q5_K: return &q5;
    case GgmlType::Q6_K: return &q6;
    default: return nullptr;
  }
}

// The chosen integers of a super-block and what they decode to.
struct SuperFit {
  float d = 0, dmin = 0;
  std::array<int, 16> sc{}, mn{};   // per sub-block
  std::array<int, kSuper> code{};   // affine: 0..code_max; symmetric: the signed level
  std::array<float, kSuper> y{};
};

// Nearest codes of one sub-block for integer scale sc (and min m); returns the weighted error.
double fit_sub(const KSpec& k, const float* x, const float* w, float d, float dmin, int sc, int m, int* code,
               float* y) {
  double err = 0;
  const float step = d * static_cast<float>(sc);
  for (int i = 0; i < k.sub; ++i) {
    int q;
    float v;
    if (k.affine) {
      const float off = dmin * static_cast<float>(m);
      float r = step > 0 ? std::nearbyint((x[i] + off) / step) : 0.0f;
      q = static_cast<int>(std::clamp(r, 0.0f, static_cast<float>(k.code_max)));
      v = d * static_cast<float>(sc) * static_cast<float>(q) - dmin * static_cast<float>(m);
    } else {
      float r = step != 0 ? std::nearbyint(x[i] / step) : 0.0f;
      q = static_cast<int>(std::clamp(r, static_cast<float>(k.level_lo), static_cast<float>(k.level_hi)));
      v = d * static_cast<float>(sc) * static_cast<float>(q);
    }
    code[i] = q;
    y[i] = v;
    double e = static_cast<double>(x[i]) - static_cast<double>(v);
    err += static_cast<double>(w[i]) * e * e;
  }
  return err;
}

SuperFit fit_super(const KSpec& k, const float* x, const float* w) {
  const int n_sub = kSuper / k.sub;
  std::array<float, 16> scale{}, min{};  // real-valued, per sub-block; min >= 0 means y offset -min
  if (k.affine) {
    for (int j = 0; j < n_sub; ++j) {
      AffineFit f = search_affine(Run{x + j * k.sub, w + j * k.sub, k.sub}, k.code_max, keep, true);
      scale[j] = f.d;
      min[j] = -f.m;
    }
  } else {
    for (int j = 0; j < n_sub; ++j) {
      ScaleFit f = search_scale(Run{x + j * k.sub, w + j * k.sub, k.sub}, *k.levels, keep);
      scale[j] = f.d;
    }
  }
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < n_sub; ++j) {
    max_scale = std::max(max_scale, std::fabs(scale[j]));
    max_min = std::max(max_min, min[j]);
  }
  SuperFit s;
  s.d = round_f16(max_scale / static_cast<float>(k.scale_hi));
  s.dmin = k.affine ? round_f16(max_min / static_cast<float>(k.scale_hi)) : 0.0f;
  const int min_hi = k.affine ? k.scale_hi : 0;
  std::array<int, 32> code{};
  std::array<float, 32> y{};
  for (int j = 0; j < n_sub; ++j) {
    const float* xs = x + j * k.sub;
    const float* ws = w + j * k.sub;
    const int sc0 = s.d != 0 ? static_cast<int>(std::clamp(std::nearbyint(scale[j] / s.d), static_cast<float>(k.scale_lo),
                                                           static_cast<float>(k.scale_hi)))
                             : 0;
    const int m0 = s.dmin != 0 ? static_cast<int>(std::clamp(std::nearbyint(min[j] / s.dmin), 0.0f,
                                                            static_cast<float>(min_hi)))
                               : 0;
    double best = std::numeric_limits<double>::infinity();
    for (int dsc = -1; dsc <= 1; ++dsc) {
      for (int dm = -1; dm <= 1; ++dm) {
        const int sc = sc0 + dsc, m = m0 + dm;
        if (sc < k.scale_lo || sc > k.scale_hi || m < 0 || m > min_hi) continue;
        double err = fit_sub(k, xs, ws, s.d, s.dmin, sc, m, code.data(), y.data());
        if (err < best) {
          best = err;
          s.sc[j] = sc;
          s.mn[j] = m;
          std::copy_n(code.begin(), k.sub, s.code.begin() + j * k.sub);
          std::copy_n(y.begin(), k.sub, s.y.begin() + j * k.sub);
        }
      }
    }
  }
  return s;
}

// Q4_K/Q5_K: 6-bit scales and mins of 8 sub-blocks in 12 bytes (dequantize.cpp k4_scale_min).
void pack_scale_min_6bit(const SuperFit& s, std::byte* q) {
  std::array<uint8_t, 12> b{};
  for (int j = 0; j < 8; ++j) {
    const int sc = s.sc[j], m = s.mn[j];
    if (j < 4) {
      b[j] |= static_cast<uint8_t>(sc & 63);
      b[j + 4] |= static_cast<uint8_t>(m & 63);
    } else {
      b[j + 4] |= static_cast<uint8_t>((sc & 0xF) | (m & 0xF) << 4);
      b[j - 4] |= static_cast<uint8_t>((sc >> 4) << 6);
      b[j] |= static_cast<uint8_t>((m >> 4) << 6);
    }
  }
  for (int i = 0; i < 12; ++i) q[i] = static_cast<std::byte>(b[i]);
}

// Q4_K/Q5_K nibbles: 64-element chunk c in bytes [32c, 32c+32): sub-block 2c low, 2c+1 high.
void pack_k_nibbles(const SuperFit& s, std::byte* qs) {
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l)
      qs[32 * c + l] = static_cast<std::byte>((s.code[64 * c + l] & 0xF) | (s.code[64 * c + 32 + l] & 0xF) << 4);
}

void write_q4_k(const SuperFit& s, std::byte* out) {
  put_f16(out, s.d);
  put_f16(out + 2, s.dmin);
  pack_scale_min_6bit(s, out + 4);
  pack_k_nibbles(s, out + 16);
}

void write_q5_k(const SuperFit& s, std::byte* out) {
  put_f16(out, s.d);
  put_f16(out + 2, s.dmin);
  pack_scale_min_6bit(s, out + 4);
  for (int l = 0; l < 32; ++l) {
    uint8_t h = 0;
    for (int j = 0; j < 8; ++j) h |= static_cast<uint8_t>(((s.code[32 * j + l] >> 4) & 1) << j);
    out[16 + l] = static_cast<std::byte>(h);
  }
  pack_k_nibbles(s, out + 48);
}

// Element e = 128 h + 32 k + l of the 2-bit-field layouts (Q2_K, Q3_K, Q6_K's high bits).
void write_q2_k(const SuperFit& s, std::byte* out) {
  for (int j = 0; j < 16; ++j) out[j] = static_cast<std::byte>(s.sc[j] | s.mn[j] << 4);
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      uint8_t b = 0;
      for (int k = 0; k < 4; ++k) b |= static_cast<uint8_t>((s.code[128 * h + 32 * k + l] & 3) << (2 * k));
      out[16 + 32 * h + l] = static_cast<std::byte>(b);
    }
  put_f16(out + 80, s.d);
  put_f16(out + 82, s.dmin);
}

void write_q3_k(const SuperFit& s, std::byte* out) {
  std::array<uint8_t, 32> hmask{};
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      uint8_t b = 0;
      for (int k = 0; k < 4; ++k) {
        const int q3 = s.code[128 * h + 32 * k + l] + 4;  // 0..7
        b |= static_cast<uint8_t>((q3 & 3) << (2 * k));
        hmask[l] |= static_cast<uint8_t>(((q3 >> 2) & 1) << (4 * h + k));
      }
      out[32 + 32 * h + l] = static_cast<std::byte>(b);
    }
  for (int l = 0; l < 32; ++l) out[l] = static_cast<std::byte>(hmask[l]);
  std::array<uint8_t, 12> sc{};
  for (int j = 0; j < 16; ++j) {
    const int v = s.sc[j] + 32;  // 0..63
    if (j < 8)
      sc[j] |= static_cast<uint8_t>(v & 0xF);
    else
      sc[j - 8] |= static_cast<uint8_t>((v & 0xF) << 4);
    sc[8 + j % 4] |= static_cast<uint8_t>((v >> 4) << (2 * (j / 4)));
  }
  for (int i = 0; i < 12; ++i) out[96 + i] = static_cast<std::byte>(sc[i]);
  put_f16(out + 108, s.d);
}

void write_q6_k(const SuperFit& s, std::byte* out) {
  for (int i = 0; i < 192; ++i) out[i] = std::byte{0};
  for (int h = 0; h < 2; ++h)
    for (int k = 0; k < 4; ++k)
      for (int l = 0; l < 32; ++l) {
        const int q6 = s.code[128 * h + 32 * k + l] + 32;  // 0..63
        std::byte& low = out[64 * h + l + 32 * (k % 2)];
        low |= static_cast<std::byte>((q6 & 0xF) << (4 * (k / 2)));
        std::byte& high = out[128 + 32 * h + l];
        high |= static_cast<std::byte>((q6 >> 4) << (2 * k));
      }
  for (int j = 0; j < 16; ++j) out[192 + j] = static_cast<std::byte>(static_cast<int8_t>(s.sc[j]));
  put_f16(out + 208, s.d);
}

}  // namespace

bool can_quantize_kquant(GgmlType t) { return spec_of(t) != nullptr; }

void quantize_kquant_block(GgmlType t, const float* x, const float* w, std::byte* out, float* y) {
  const KSpec* k = spec_of(t);
  if (k == nullptr) throw Error("quantize " + std::string(ggml_type_name(t)), "not a K-quant type");
  const SuperFit s = fit_super(*k, x, w);
  switch (t) {
    case GgmlType::Q2_K: write_q2_k(s, out); break;
    case GgmlType::Q3_K: write_q3_k(s, out); break;
    case GgmlType::Q4_K: write_q4_k(s, out); break;
    case GgmlType::Q5_K: write_q5_k(s, out); break;
    default: write_q6_k(s, out); break;
  }
  if (y != nullptr) std::copy(s.y.begin(), s.y.end(), y);
}

}  // namespace fsq
