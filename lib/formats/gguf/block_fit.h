// Weighted fits of short runs of weights (a block or a K-quant sub-block) to a code grid:
// shared by the legacy and K-quant writers (quantize_blocks.cpp, quantize_kquants.cpp).
// Internal to lib/formats/gguf. Errors are sum_i w_i (x_i - y_i)^2 in double; scales pass
// through `round_scale` (fp16 rounding for scales stored as fp16, identity for sub-block
// scales that are quantized again later) before their codes are chosen.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace fsq::gguf_fit {

constexpr int kMaxRun = 32;  // longest run fitted at once
using Codes = std::array<uint8_t, kMaxRun>;
using Round = float (*)(float);

float round_f16(float v);
inline float keep(float v) { return v; }
// Stores v as a little-endian fp16 (a block's d or m field).
void put_f16(std::byte* p, float v);

struct Run {
  const float* x;
  const float* w;  // never null
  int n;           // <= kMaxRun
};

// v rounded to the nearest integer, ties to even: std::nearbyint in the default rounding mode,
// for |v| <= 2^22. Inline, where std::nearbyint is a libm call on baseline x86-64 (no SSE4.1),
// in the fits' innermost loops (they were half of a Q4_K export's time).
inline float round_half_even(float v) {
  constexpr float kMagic = 12582912.0f;  // 1.5 x 2^23: the sum keeps no fraction bits
  return (v + kMagic) - kMagic;
}

// A signed code grid: y = scale * levels[index].
struct Codebook {
  std::array<int, 256> levels{};  // ascending
  int count = 0;
  bool consecutive = false;  // levels[i] = levels[0] + i: rounding finds the nearest
  // Index of the level nearest v (ties to the lower level; on a consecutive grid, to even).
  int nearest(float v) const {
    if (!consecutive) return nearest_listed(v);
    // Clamping to the integer ends first gives what rounding first would, and bounds |v|.
    v = std::clamp(v, static_cast<float>(levels[0]), static_cast<float>(levels[count - 1]));
    return static_cast<int>(round_half_even(v)) - levels[0];
  }
  int nearest_listed(float v) const;  // binary search of the levels
};
Codebook consecutive_codebook(int lo, int hi);
Codebook iq4nl_codebook();

struct ScaleFit {
  float d = 0;
  Codes codes{};  // codebook indices
  double err = std::numeric_limits<double>::infinity();
};

// Nearest codes for scale d (already rounded as stored) and their error.
ScaleFit fit_scale(const Run& r, const Codebook& cb, float d);
// Best scale among: the largest-magnitude element mapped onto either end level, stretched by
// up to +-10 % (plain rounding's max / end among them), each refitted once by weighted least
// squares on its codes.
ScaleFit search_scale(const Run& r, const Codebook& cb, Round round_scale);

// y = d * code + m, code in [0, n_max].
struct AffineFit {
  float d = 0, m = 0;
  Codes codes{};
  double err = std::numeric_limits<double>::infinity();
};

// Starts from [min, max] shrunk by 0..20 % at either end (plain rounding unshrunk), then
// alternates nearest codes and the weighted least-squares (d, m) twice. With
// `nonpositive_offset`, m is kept <= 0 (K-quants store -m as an unsigned multiple).
AffineFit search_affine(const Run& r, int n_max, Round round_scale, bool nonpositive_offset);

}  // namespace fsq::gguf_fit
