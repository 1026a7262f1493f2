#include "formats/gguf/block_fit.h"

#include <algorithm>
#include <cmath>

#include "common/half.h"
#include "formats/gguf/dequantize.h"

namespace fsq::gguf_fit {

float round_f16(float v) { return f16_to_f32(f32_to_f16(v)); }

void put_f16(std::byte* p, float v) {
  const uint16_t h = f32_to_f16(v);
  p[0] = static_cast<std::byte>(h & 0xFF);
  p[1] = static_cast<std::byte>(h >> 8);
}

int Codebook::nearest_listed(float v) const {
  const int* first = levels.data();
  int i = static_cast<int>(std::lower_bound(first, first + count, v, [](int l, float t) { return l < t; }) - first);
  if (i == 0) return 0;
  if (i == count) return count - 1;
  return (v - static_cast<float>(levels[i - 1]) <= static_cast<float>(levels[i]) - v) ? i - 1 : i;
}

Codebook consecutive_codebook(int lo, int hi) {
  Codebook cb;
  cb.count = hi - lo + 1;
  for (int i = 0; i < cb.count; ++i) cb.levels[i] = lo + i;
  cb.consecutive = true;
  return cb;
}

Codebook iq4nl_codebook() {
  Codebook cb;
  const auto& levels = iq4nl_levels();
  cb.count = static_cast<int>(levels.size());
  for (int i = 0; i < cb.count; ++i) cb.levels[i] = levels[i];
  return cb;
}

ScaleFit fit_scale(const Run& r, const Codebook& cb, float d) {
  ScaleFit f;
  f.d = d;
  double err = 0;  // a local: the code stores may alias f.err, which kept it in memory
  for (int i = 0; i < r.n; ++i) {
    int q = cb.nearest(d != 0 ? r.x[i] / d : 0.0f);
    f.codes[i] = static_cast<uint8_t>(q);
    double e = static_cast<double>(r.x[i]) - static_cast<double>(d * static_cast<float>(cb.levels[q]));
    err += static_cast<double>(r.w[i]) * e * e;
  }
  f.err = err;
  return f;
}

namespace {

// Weighted least-squares scale for fixed codes: sum w x l / sum w l^2.
float refit_scale(const Run& r, const Codebook& cb, const Codes& codes) {
  double num = 0, den = 0;
  for (int i = 0; i < r.n; ++i) {
    double l = cb.levels[codes[i]];
    num += r.w[i] * r.x[i] * l;
    den += r.w[i] * l * l;
  }
  return den > 0 ? static_cast<float>(num / den) : 0.0f;
}

AffineFit fit_affine(const Run& r, int n_max, float d, float m) {
  AffineFit f;
  f.d = d;
  f.m = m;
  double err = 0;  // a local, as in fit_scale
  for (int i = 0; i < r.n; ++i) {
    const float q_real = d != 0 ? std::clamp((r.x[i] - m) / d, 0.0f, static_cast<float>(n_max)) : 0.0f;
    int q = static_cast<int>(round_half_even(q_real));  // clamped first: see Codebook::nearest
    f.codes[i] = static_cast<uint8_t>(q);
    double e = static_cast<double>(r.x[i]) - static_cast<double>(d * static_cast<float>(q) + m);
    err += static_cast<double>(r.w[i]) * e * e;
  }
  f.err = err;
  return f;
}

}  // namespace

ScaleFit search_scale(const Run& r, const Codebook& cb, Round round_scale) {
  int imax = 0;
  for (int i = 1; i < r.n; ++i)
    if (std::fabs(r.x[i]) > std::fabs(r.x[imax])) imax = i;
  const float xm = r.x[imax];
  ScaleFit best = fit_scale(r, cb, 0.0f);
  if (xm == 0) return best;
  auto consider = [&](float d) {
    d = round_scale(d);
    if (d == 0 || !std::isfinite(d)) return;
    ScaleFit f = fit_scale(r, cb, d);
    if (f.err < best.err) best = f;
    float refit = round_scale(refit_scale(r, cb, f.codes));
    if (refit == 0 || !std::isfinite(refit) || refit == d) return;
    ScaleFit g = fit_scale(r, cb, refit);
    if (g.err < best.err) best = g;
  };
  for (int end : {cb.levels[0], cb.levels[cb.count - 1]}) {
    if (end == 0) continue;
    for (int k = -8; k <= 8; ++k) consider(xm / (static_cast<float>(end) * (1.0f + 0.0125f * static_cast<float>(k))));
  }
  return best;
}

AffineFit search_affine(const Run& r, int n_max, Round round_scale, bool nonpositive_offset) {
  float mn = r.x[0], mx = r.x[0];
  for (int i = 1; i < r.n; ++i) {
    mn = std::min(mn, r.x[i]);
    mx = std::max(mx, r.x[i]);
  }
  if (nonpositive_offset) {
    mn = std::min(mn, 0.0f);
    mx = std::max(mx, 0.0f);
  }
  AffineFit best = fit_affine(r, n_max, 0.0f, round_scale(mn));
  const float range = mx - mn;
  if (range == 0) return best;
  constexpr std::array<float, 5> kShrink = {0.0f, 0.05f, 0.1f, 0.15f, 0.2f};
  for (float a : kShrink) {
    for (float c : kShrink) {
      float lo = mn + a * range, hi = mx - c * range;
      if (nonpositive_offset) lo = std::min(lo, 0.0f);
      if (hi <= lo) continue;
      float d = (hi - lo) / static_cast<float>(n_max), m = lo;
      for (int it = 0; it < 3; ++it) {
        d = round_scale(d);
        m = round_scale(m);
        if (d <= 0 || !std::isfinite(d) || !std::isfinite(m)) break;
        AffineFit f = fit_affine(r, n_max, d, m);
        if (f.err < best.err) best = f;
        double sw = 0, sq = 0, sqq = 0, sx = 0, sqx = 0;
        for (int i = 0; i < r.n; ++i) {
          double w = r.w[i], q = f.codes[i], x = r.x[i];
          sw += w;
          sq += w * q;
          sqq += w * q * q;
          sx += w * x;
          sqx += w * q * x;
        }
        double det = sqq * sw - sq * sq;
        if (!(det > 1e-12 * sqq * sw)) break;  // all codes equal: (d, m) not identified
        double d_ls = (sqx * sw - sq * sx) / det, m_ls = (sqq * sx - sq * sqx) / det;
        if (nonpositive_offset && m_ls > 0) {  // the constrained optimum sits on m = 0
          m_ls = 0;
          d_ls = sqq > 0 ? sqx / sqq : 0;
        }
        d = static_cast<float>(d_ls);
        m = static_cast<float>(m_ls);
      }
    }
  }
  return best;
}

}  // namespace fsq::gguf_fit
