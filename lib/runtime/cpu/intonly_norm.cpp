// Integer square root and integer RMSNorm (intonly_ops.h).
#include <bit>
#include <cmath>
#include <string>

#include "common/error.h"
#include "runtime/cpu/intonly_ops.h"

namespace fsq::cpu {

uint64_t isqrt_u64(uint64_t n) {
  if (n < 2) return n;
  // x0 = 2^ceil(bits/2) > sqrt(n). From any x >= floor(sqrt(n)) Newton's step decreases
  // strictly until x = floor(sqrt(n)), where the next step no longer decreases. x <= 2^32
  // and n / x <= 2^32 + 2, so x + n / x never overflows.
  uint64_t x = uint64_t{1} << ((std::bit_width(n) + 1) / 2);
  uint64_t y = (x + n / x) / 2;
  while (y < x) {
    x = y;
    y = (x + n / x) / 2;
  }
  return x;
}

uint64_t isqrt_u128(unsigned __int128 n) {
  const auto hi = static_cast<uint64_t>(n >> 64);
  if (hi == 0) return isqrt_u64(static_cast<uint64_t>(n));
  const int bits = 64 + std::bit_width(hi);
  unsigned __int128 x = static_cast<unsigned __int128>(1) << ((bits + 1) / 2);  // <= 2^64
  unsigned __int128 y = (x + n / x) / 2;
  while (y < x) {
    x = y;
    y = (x + n / x) / 2;
  }
  return static_cast<uint64_t>(x);  // floor(sqrt(n)) < 2^64
}

IRmsNormConstants irmsnorm_constants(double in_scale, double eps, int frac_bits, int out_frac_bits) {
  if (!std::isfinite(in_scale) || in_scale <= 0)
    throw Error("irmsnorm_constants", "input scale must be finite and > 0", "> 0", std::to_string(in_scale));
  if (!std::isfinite(eps) || eps < 0)
    throw Error("irmsnorm_constants", "eps must be finite and >= 0", ">= 0", std::to_string(eps));
  if (frac_bits < 0 || frac_bits > 24)
    throw Error("irmsnorm_constants", "frac_bits out of range", "0..24", std::to_string(frac_bits));
  if (out_frac_bits < 0 || out_frac_bits > 16)
    throw Error("irmsnorm_constants", "out_frac_bits out of range", "0..16", std::to_string(out_frac_bits));
  const double q_eps = std::nearbyint(eps / (in_scale * in_scale) * std::ldexp(1.0, 2 * frac_bits));
  if (!(q_eps < 0x1p100))
    throw Error("irmsnorm_constants", "eps / in_scale^2 * 4^frac_bits does not fit", "< 2^100", std::to_string(q_eps));
  IRmsNormConstants c;
  c.frac_bits = frac_bits;
  c.out_frac_bits = out_frac_bits;
  c.q_eps = static_cast<unsigned __int128>(q_eps);
  return c;
}

double quantize_gain_int16(const float* g, int64_t n, int16_t* q_g) {
  double amax = 0;
  for (int64_t i = 0; i < n; ++i) amax = std::fmax(amax, std::fabs(static_cast<double>(g[i])));
  const double s = amax > 0 ? amax / 32767 : 1.0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = std::nearbyint(static_cast<double>(g[i]) / s);
    q_g[i] = static_cast<int16_t>(v < -32767 ? -32767 : v > 32767 ? 32767 : v);
  }
  return s;
}

namespace {

bool rms_args_ok(const void* q, int64_t n, const int16_t* q_g, const IRmsNormConstants& c, const void* out) {
  return q && q_g && out && n >= 1 && n < (int64_t{1} << 40) && c.frac_bits >= 0 && c.frac_bits <= 24 &&
         c.out_frac_bits >= 0 && c.out_frac_bits <= 16 && c.q_eps < (static_cast<unsigned __int128>(1) << 100);
}

// Calls sink(i, out_i) with out_i the int32 RMSNorm code (scale S_g 2^-F).
template <typename In, typename Sink>
void rms_impl(const In* q, int64_t n, const int16_t* q_g, const IRmsNormConstants& c, Sink sink) {
  unsigned __int128 ss = 0;  // exact: every q^2 <= 2^62
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = q[i];
    ss += static_cast<uint64_t>(v * v);
  }
  // floor(ss 4^P / n) without overflow: ss / n <= 2^62, so (ss / n) 4^P <= 2^110.
  const int p2 = 2 * c.frac_bits;
  const auto un = static_cast<uint64_t>(n);
  const unsigned __int128 v = ((ss / un) << p2) + (((ss % un) << p2) / un) + c.q_eps;  // < 2^111
  const uint64_t d = isqrt_u128(v);  // ~= 2^P sqrt(mean(q^2) + eps / S^2) < 2^56
  if (d == 0) {
    for (int64_t i = 0; i < n; ++i) sink(i, 0);
    return;
  }
  const int sh = c.frac_bits + c.out_frac_bits;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t prod = static_cast<int64_t>(q[i]) * q_g[i];  // |.| <= 2^46
    const uint64_t mag0 = static_cast<uint64_t>(prod < 0 ? -prod : prod);
    const unsigned __int128 mag = static_cast<unsigned __int128>(mag0) << sh;  // <= 2^86
    uint64_t r;
    if ((mag >> 64) == 0) {
      const auto m64 = static_cast<uint64_t>(mag);
      r = m64 / d + ((m64 % d) >= d - d / 2 ? 1 : 0);  // round half away: rem >= d/2 (ceil)
    } else {
      const unsigned __int128 qt = mag / d;
      const auto rem = static_cast<uint64_t>(mag - qt * d);
      const unsigned __int128 rr = qt + (rem >= d - d / 2 ? 1 : 0);
      r = rr > INT32_MAX ? uint64_t{INT32_MAX} : static_cast<uint64_t>(rr);
    }
    if (r > INT32_MAX) r = INT32_MAX;
    sink(i, static_cast<int32_t>(prod < 0 ? -static_cast<int64_t>(r) : static_cast<int64_t>(r)));
  }
}

}  // namespace

KernelStatus irmsnorm_row(const int32_t* q, int64_t n, const int16_t* q_g, const IRmsNormConstants& c, int32_t* out) {
  if (!rms_args_ok(q, n, q_g, c, out)) return KernelStatus::InvalidArgument;
  rms_impl(q, n, q_g, c, [out](int64_t i, int32_t v) { out[i] = v; });
  return KernelStatus::Ok;
}

KernelStatus irmsnorm_row(const int8_t* q, int64_t n, const int16_t* q_g, const IRmsNormConstants& c, int32_t* out) {
  if (!rms_args_ok(q, n, q_g, c, out)) return KernelStatus::InvalidArgument;
  rms_impl(q, n, q_g, c, [out](int64_t i, int32_t v) { out[i] = v; });
  return KernelStatus::Ok;
}

KernelStatus irmsnorm_row_int8(const int32_t* q, int64_t n, const int16_t* q_g, const IRmsNormConstants& c,
                               Dyadic to_int8, int8_t* out) {
  if (!rms_args_ok(q, n, q_g, c, out)) return KernelStatus::InvalidArgument;
  rms_impl(q, n, q_g, c, [out, to_int8](int64_t i, int32_t v) { out[i] = saturate_code8(requantize_wide(v, to_int8)); });
  return KernelStatus::Ok;
}

}  // namespace fsq::cpu
