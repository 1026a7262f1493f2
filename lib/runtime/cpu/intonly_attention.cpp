#include "runtime/cpu/intonly_attention.h"

#include <vector>

namespace fsq::cpu {

KernelStatus irope(const int32_t* x, int64_t tokens, int64_t heads, int64_t head_dim, const int32_t* cos_q,
                   const int32_t* sin_q, int64_t first_position, int extra_bits, int32_t code_max, int16_t* out) {
  if (!x || !cos_q || !sin_q || !out || tokens < 0 || heads <= 0 || head_dim < 2 || head_dim % 2 != 0 ||
      first_position < 0 || extra_bits < 0 || extra_bits > 30 || code_max < 1 || code_max > 32767)
    return KernelStatus::InvalidArgument;
  const auto clip = [code_max](int64_t v) {
    return static_cast<int16_t>(v < -code_max ? -code_max : v > code_max ? code_max : v);
  };
  // round(r / 2^shift) as a dyadic requantization: m = 2^30, 30 + shift fraction bits.
  const Dyadic down{int32_t{1} << 30, 30 + kRopeFracBits + extra_bits};
  const int64_t half = head_dim / 2;
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < tokens; ++t) {
    const int32_t* c = cos_q + (first_position + t) * head_dim;
    const int32_t* s = sin_q + (first_position + t) * head_dim;
    for (int64_t h = 0; h < heads; ++h) {
      const int32_t* xr = x + (t * heads + h) * head_dim;
      int16_t* o = out + (t * heads + h) * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const int64_t a = xr[i], b = xr[i + half];
        o[i] = clip(requantize_wide(a * c[i] - b * s[i], down));
        o[i + half] = clip(requantize_wide(b * c[i + half] + a * s[i + half], down));
      }
    }
  }
  return KernelStatus::Ok;
}

namespace {

template <typename Out, typename Sat>
KernelStatus iattention_rows(const int16_t* q, const int16_t* k, const int8_t* v, const IAttentionShape& sh,
                             const IExpConstants& exp, int prob_frac_bits, Dyadic to_out, Out* out, Sat saturate) {
  if (!q || !k || !v || !out || sh.batch < 0 || sh.tokens < 0 || sh.heads <= 0 || sh.kv_heads <= 0 ||
      sh.heads % sh.kv_heads != 0 || sh.head_dim <= 0 || sh.head_dim > kMaxQkHeadDim || sh.tokens >= (int64_t{1} << 20) || prob_frac_bits < 1 ||
      prob_frac_bits > 16)
    return KernelStatus::InvalidArgument;
  const int64_t T = sh.tokens, H = sh.heads, KV = sh.kv_heads, D = sh.head_dim, rep = H / KV;
  const int64_t rows = sh.batch * H * T;
  KernelStatus status = KernelStatus::Ok;
#pragma omp parallel
  {
    std::vector<int32_t> scores(static_cast<size_t>(T)), probs(static_cast<size_t>(T));
    std::vector<int64_t> acc(static_cast<size_t>(D));
#pragma omp for schedule(dynamic, 8)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t b = r / (H * T), h = (r / T) % H, t = r % T, g = h / rep;
      const int16_t* qr = q + ((b * T + t) * H + h) * D;
      for (int64_t j = 0; j <= t; ++j) {
        const int16_t* kr = k + ((b * T + j) * KV + g) * D;
        int32_t dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += int32_t{qr[d]} * int32_t{kr[d]};
        scores[static_cast<size_t>(j)] = dot;
      }
      if (isoftmax_row(scores.data(), t + 1, exp, prob_frac_bits, probs.data()) != KernelStatus::Ok) {
#pragma omp critical
        status = KernelStatus::InvalidArgument;
        continue;
      }
      for (int64_t d = 0; d < D; ++d) acc[static_cast<size_t>(d)] = 0;
      for (int64_t j = 0; j <= t; ++j) {
        const int64_t p = probs[static_cast<size_t>(j)];
        if (p == 0) continue;
        const int8_t* vr = v + ((b * T + j) * KV + g) * D;
        for (int64_t d = 0; d < D; ++d) acc[static_cast<size_t>(d)] += p * vr[d];
      }
      Out* o = out + ((b * T + t) * H + h) * D;
      for (int64_t d = 0; d < D; ++d) o[d] = saturate(requantize_wide(acc[static_cast<size_t>(d)], to_out));
    }
  }
  return status;
}

}  // namespace

KernelStatus iattention(const int16_t* q, const int16_t* k, const int8_t* v, const IAttentionShape& sh,
                        const IExpConstants& exp, int prob_frac_bits, Dyadic to_out, int8_t* out) {
  return iattention_rows(q, k, v, sh, exp, prob_frac_bits, to_out, out, saturate_code8);
}

KernelStatus iattention(const int16_t* q, const int16_t* k, const int8_t* v, const IAttentionShape& sh,
                        const IExpConstants& exp, int prob_frac_bits, Dyadic to_out, int32_t* out) {
  return iattention_rows(q, k, v, sh, exp, prob_frac_bits, to_out, out, saturate_int32);
}

}  // namespace fsq::cpu
