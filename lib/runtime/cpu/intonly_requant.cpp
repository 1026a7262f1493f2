// Dyadic requantization (intonly_ops.h).
#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"
#include "runtime/cpu/intonly_ops.h"

namespace fsq::cpu {

Dyadic dyadic_from_real(double multiplier) {
  if (!std::isfinite(multiplier) || multiplier < 0 || multiplier > 0x1p30)
    throw Error("dyadic_from_real", "multiplier must be finite and in [0, 2^30]", "[0, 2^30]",
                std::to_string(multiplier));
  if (multiplier < 0x1p-64) return {};
  int e = 0;
  const double f = std::frexp(multiplier, &e);                       // multiplier = f 2^e, f in [0.5, 1)
  auto m = static_cast<int64_t>(std::nearbyint(std::ldexp(f, 31)));  // in [2^30, 2^31]
  if (m == (int64_t{1} << 31)) {
    m >>= 1;
    ++e;
  }
  // multiplier ~= m 2^(e - 31); e <= 31 (multiplier <= 2^30), e >= -63.
  return {static_cast<int32_t>(m), 31 - e};
}

double dyadic_value(Dyadic d) { return std::ldexp(static_cast<double>(d.m), -d.shift); }

int64_t requantize_wide(int64_t acc, Dyadic d) {
  const __int128 p = static_cast<__int128>(acc) * d.m;
  __int128 r;
  if (d.shift > 126) return 0;  // |p| < 2^94: rounds to 0
  if (d.shift <= 0) {
    if (p != 0 && d.shift < -32) return p > 0 ? INT64_MAX : INT64_MIN;
    r = p * (static_cast<__int128>(1) << -d.shift);  // |p| < 2^94: fits
  } else {
    const __int128 half = static_cast<__int128>(1) << (d.shift - 1);
    r = p >= 0 ? (p + half) >> d.shift : -((-p + half) >> d.shift);  // half away from zero
  }
  if (r > INT64_MAX) return INT64_MAX;
  if (r < INT64_MIN) return INT64_MIN;
  return static_cast<int64_t>(r);
}

namespace {

template <typename In, typename Out, typename Sat>
KernelStatus requantize_loop(const In* acc, int64_t n, Dyadic d, Out* out, Sat sat) {
  if (n < 0 || (n > 0 && (!acc || !out))) return KernelStatus::InvalidArgument;
  for (int64_t i = 0; i < n; ++i) out[i] = sat(requantize_wide(acc[i], d));
  return KernelStatus::Ok;
}

template <typename Out, typename Sat>
KernelStatus per_channel_loop(const int32_t* acc, int64_t m, int64_t cols, int64_t acc_stride, const Dyadic* d,
                              Out* out, int64_t out_stride, Sat sat) {
  if (m < 0 || cols < 0 || acc_stride < cols || out_stride < cols) return KernelStatus::InvalidArgument;
  if (m == 0 || cols == 0) return KernelStatus::Ok;
  if (!acc || !d || !out) return KernelStatus::InvalidArgument;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < cols; ++j) out[i * out_stride + j] = sat(requantize_wide(acc[i * acc_stride + j], d[j]));
  return KernelStatus::Ok;
}

}  // namespace

KernelStatus requantize_array(const int32_t* acc, int64_t n, Dyadic d, int8_t* out) {
  return requantize_loop(acc, n, d, out, saturate_int8);
}
KernelStatus requantize_array(const int32_t* acc, int64_t n, Dyadic d, int16_t* out) {
  return requantize_loop(acc, n, d, out, saturate_int16);
}
KernelStatus requantize_array(const int32_t* acc, int64_t n, Dyadic d, int32_t* out) {
  return requantize_loop(acc, n, d, out, saturate_int32);
}
KernelStatus requantize_array(const int64_t* acc, int64_t n, Dyadic d, int8_t* out) {
  return requantize_loop(acc, n, d, out, saturate_int8);
}
KernelStatus requantize_array(const int64_t* acc, int64_t n, Dyadic d, int16_t* out) {
  return requantize_loop(acc, n, d, out, saturate_int16);
}
KernelStatus requantize_array(const int64_t* acc, int64_t n, Dyadic d, int32_t* out) {
  return requantize_loop(acc, n, d, out, saturate_int32);
}

int quantize_token_pow2(const int32_t* x, int64_t n, int8_t* out) {
  if (n < 1 || !x || !out) return -1;
  int64_t top = 0;
  for (int64_t i = 0; i < n; ++i) top = std::max<int64_t>(top, x[i] < 0 ? -int64_t{x[i]} : int64_t{x[i]});
  int k = 0;
  while (requantize_wide(top, Dyadic{1, k}) > 127) ++k;
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int8_t>(requantize_wide(x[i], Dyadic{1, k}));
  return k;
}

KernelStatus requantize_per_channel(const int32_t* acc, int64_t m, int64_t cols, int64_t acc_stride, const Dyadic* d,
                                    int8_t* out, int64_t out_stride) {
  return per_channel_loop(acc, m, cols, acc_stride, d, out, out_stride, saturate_int8);
}
KernelStatus requantize_per_channel(const int32_t* acc, int64_t m, int64_t cols, int64_t acc_stride, const Dyadic* d,
                                    int32_t* out, int64_t out_stride) {
  return per_channel_loop(acc, m, cols, acc_stride, d, out, out_stride, saturate_int32);
}

}  // namespace fsq::cpu
