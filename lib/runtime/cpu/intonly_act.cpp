// i-GELU and the integer SiLU (intonly_ops.h).
#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "runtime/cpu/intonly_internal.h"
#include "runtime/cpu/intonly_ops.h"

namespace fsq::cpu {

using namespace intonly_detail;

IGeluConstants igelu_constants(double in_scale) {
  check_in_scale("igelu_constants", in_scale);
  IGeluConstants c;
  c.in_scale = in_scale;
  c.in_shift = pick_shift(in_scale, -14, -10);
  const double sp = std::ldexp(in_scale, -c.in_shift) / std::numbers::sqrt2;  // u = x / sqrt2
  const double erf_scale = -kIGeluA * sp * sp;                                // |a| S'^2
  c.q_b = static_cast<int64_t>(std::floor(kIGeluB / sp));
  c.q_one = static_cast<int64_t>(std::floor(1.0 / erf_scale));
  c.out_scale = in_scale * erf_scale / 2;
  return c;
}

int64_t igelu(int64_t q, const IGeluConstants& c) {
  const int64_t clip = -c.q_b;  // > 0
  const int64_t a = q < 0 ? (q < -INT64_MAX ? INT64_MAX : -q) : q;
  int64_t ae;  // |q_e| clipped at -q_b
  if (c.in_shift > 0)
    ae = a > (clip >> c.in_shift) ? clip : std::min(a << c.in_shift, clip);
  else
    ae = std::min(a >> -c.in_shift, clip);
  const int64_t t = ae + c.q_b;  // in [q_b, 0]
  const int64_t t2 = t * t;      // <= q_b^2 < q_one: |erf| code E = q_one - t2 > 0
  // x/2 (1 + L): q (q_one + E) for q >= 0, q (q_one - E) = q t^2 for q < 0.
  return q >= 0 ? q * (2 * c.q_one - t2) : q * t2;
}

KernelStatus igelu_array(const int32_t* q, int64_t n, const IGeluConstants& c, int64_t* out) {
  if (n < 0 || (n > 0 && (!q || !out)) || c.q_b >= 0 || c.q_one <= 0) return KernelStatus::InvalidArgument;
  for (int64_t i = 0; i < n; ++i) out[i] = igelu(q[i], c);
  return KernelStatus::Ok;
}

ISiluConstants isilu_constants(double in_scale, int sigmoid_frac_bits) {
  check_in_scale("isilu_constants", in_scale);
  if (sigmoid_frac_bits < 1 || sigmoid_frac_bits > 20)
    throw Error("isilu_constants", "sigmoid_frac_bits out of range", "1..20", std::to_string(sigmoid_frac_bits));
  ISiluConstants c;
  c.exp = iexp_constants(in_scale);
  c.q_one = static_cast<int64_t>(std::nearbyint(1.0 / c.exp.out_scale));
  c.sigmoid_frac_bits = sigmoid_frac_bits;
  c.out_scale = std::ldexp(in_scale, -sigmoid_frac_bits);
  return c;
}

int64_t isigmoid(int64_t q, const ISiluConstants& c) {
  const int64_t a = q < 0 ? (q < -INT64_MAX ? INT64_MAX : -q) : q;
  const auto e = static_cast<uint64_t>(iexp(-a, c.exp));  // exp(-|x|) < 2^42
  const uint64_t one = static_cast<uint64_t>(c.q_one);    // < 2^42
  const uint64_t den = one + e;
  const uint64_t num = (q >= 0 ? one : e) << c.sigmoid_frac_bits;  // < 2^62
  return static_cast<int64_t>((num + den / 2) / den);
}

int64_t isilu(int64_t q, const ISiluConstants& c) { return q * isigmoid(q, c); }

KernelStatus isilu_array(const int32_t* q, int64_t n, const ISiluConstants& c, int64_t* out) {
  if (n < 0 || (n > 0 && (!q || !out)) || c.q_one <= 0 || c.exp.q_ln2 <= 0 || c.sigmoid_frac_bits < 1 ||
      c.sigmoid_frac_bits > 20)
    return KernelStatus::InvalidArgument;
  for (int64_t i = 0; i < n; ++i) out[i] = isilu(q[i], c);
  return KernelStatus::Ok;
}

}  // namespace fsq::cpu
