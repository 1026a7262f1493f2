// i-exp and i-softmax (intonly_ops.h).
#include <algorithm>
#include <cmath>
#include <numbers>

#include "runtime/cpu/intonly_internal.h"
#include "runtime/cpu/intonly_ops.h"

namespace fsq::cpu {

using namespace intonly_detail;

IExpConstants iexp_constants(double in_scale) {
  check_in_scale("iexp_constants", in_scale);
  IExpConstants c;
  c.in_scale = in_scale;
  c.in_shift = pick_shift(in_scale, -20, -13);
  const double se = std::ldexp(in_scale, -c.in_shift);
  c.q_ln2 = static_cast<int64_t>(std::floor(std::numbers::ln2 / se));
  c.q_b = static_cast<int64_t>(std::floor(kIExpB / se));
  c.q_c = static_cast<int64_t>(std::floor(kIExpC / (kIExpA * se * se)));
  c.out_scale = kIExpA * se * se;
  return c;
}

int64_t iexp(int64_t q, const IExpConstants& c) {
  if (q > 0) q = 0;
  // Below this, x <= -2^32 (s <= 0) or x <= -2^62 S_e <= -2^42 (s > 0): exp underflows to 0,
  // and q 2^s stays within int64.
  const int64_t lim = c.in_shift > 0 ? int64_t{1} << (62 - c.in_shift) : int64_t{1} << 62;
  if (q < -lim) return 0;
  const int64_t qe = apply_shift(q, c.in_shift);
  const int64_t z = -qe / c.q_ln2;  // floor: -qe >= 0
  if (z >= 63) return 0;
  const int64_t t = qe + z * c.q_ln2 + c.q_b;  // q_p + q_b, q_p in (-q_ln2, 0]: t > 0
  return (t * t + c.q_c) >> z;
}

namespace {

// round_half_up(e 2^k / sum), e <= sum.
template <bool kWide>
inline uint64_t scaled_ratio(uint64_t e, uint64_t sum, int k) {
  if constexpr (kWide) {
    const unsigned __int128 num = (static_cast<unsigned __int128>(e) << k) + sum / 2;
    return static_cast<uint64_t>(num / sum);
  } else {
    return ((e << k) + sum / 2) / sum;
  }
}

template <typename Out>
KernelStatus softmax_impl(const int32_t* q, int64_t n, const IExpConstants& c, int k, Out* out, int64_t max_out) {
  if (!q || !out || n < 1 || n >= (int64_t{1} << 20) || k < 0 || k > 30 || c.q_ln2 <= 0)
    return KernelStatus::InvalidArgument;
  // Two passes, iexp recomputed in the second (no scratch row). Every e < 2^42, so the sum
  // is < 2^62 for n < 2^20.
  const int32_t mx = *std::max_element(q, q + n);
  uint64_t sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<uint64_t>(iexp(static_cast<int64_t>(q[i]) - mx, c));
  // sum >= iexp(0) > 0. The 64-bit path needs e 2^k + sum/2 < 2^64 with e <= sum.
  const bool wide = sum >= (uint64_t{1} << (62 - k));
  for (int64_t i = 0; i < n; ++i) {
    const auto e = static_cast<uint64_t>(iexp(static_cast<int64_t>(q[i]) - mx, c));
    const uint64_t r = wide ? scaled_ratio<true>(e, sum, k) : scaled_ratio<false>(e, sum, k);
    out[i] = static_cast<Out>(std::min<uint64_t>(r, static_cast<uint64_t>(max_out)));
  }
  return KernelStatus::Ok;
}

}  // namespace

KernelStatus isoftmax_row(const int32_t* q, int64_t n, const IExpConstants& c, int k, int32_t* out) {
  return softmax_impl(q, n, c, k, out, INT32_MAX);
}
KernelStatus isoftmax_row_u8(const int32_t* q, int64_t n, const IExpConstants& c, uint8_t* out) {
  return softmax_impl(q, n, c, kSoftmaxU8FracBits, out, 255);
}
KernelStatus isoftmax_row_i16(const int32_t* q, int64_t n, const IExpConstants& c, int16_t* out) {
  return softmax_impl(q, n, c, kSoftmaxI16FracBits, out, 32767);
}

}  // namespace fsq::cpu
