// The integer-only (I-BERT) operators of runtime/cpu/intonly_ops.h against their real-valued
// definitions: dyadic requantization against exact rounding, isqrt against the exact
// r^2 <= n < (r + 1)^2 check, and i-exp, i-softmax, integer RMSNorm, i-GELU and the integer
// SiLU against double-precision references on dense grids of input codes, within named
// bounds (each one's origin is commented; the measured maxima are printed).
#include "runtime/cpu/intonly_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>
#include <random>
#include <vector>

#include "common/error.h"

namespace fsq {
namespace {

using namespace cpu;

// dyadic_from_real rounds f 2^31 (f in [0.5, 1)) to an integer m >= 2^30: relative error
// <= 0.5 / 2^30 = 2^-31. Asserted with a factor 2 of slack, as the contract states.
constexpr double kDyadicRelError = 0x1p-30;
// i-exp on (-ln2, 0], the target. I-BERT's form a (p + b)^2 + c with minimax constants
// (intonly_ops.h; scripts/fit_intonly_constants.py) is off exp(p) by up to 1.2383e-3 in
// double arithmetic (the paper's least-squares constants: 2.128e-3, over this bound). The
// integer version measures 1.2382e-3..1.2985e-3 at S = 1e-3, 4/127, 8/127, 1e-4 (the floor of
// b / S_e lowers p + b by < S_e: < 0.97 S_e more).
constexpr double kIExpMaxAbsError = 2e-3;
// i-exp relative error on [-10, 0]: the polynomial's relative error on (-ln2, 0] is 2.476e-3;
// floor(ln2 / S_e) underestimates ln2 by < S_e <= 2^-13 per ln2 step (z <= 14 here) and the
// final >> z truncates < 2^z codes of >= 2^26. Measured 2.80e-3 (S = 1e-4), 2.70e-3..2.73e-3
// (S = 4/127, 8/127), 2.47e-3 (S = 1e-3, 2^-20). Bound: a little above.
constexpr double kIExpMaxRelError = 3e-3;
// i-GELU on [-4, 4], the target. I-BERT's form GELU(x) ~= x/2 (1 + L(x/sqrt2)) with
// minimax constants has max error 1.4461e-2 in exact arithmetic (equioscillating at |x| =
// 0.409, 1.446, 2.456; the paper's constants: 1.8152e-2 at |x| = 2.35, over this bound); the
// integer version measures 1.4463e-2..1.4500e-2 at S = 4/127, 8/127, 1e-3, 1e-4, 2^-20.
constexpr double kIGeluMaxError = 0.018;
// Integer SiLU on [-8, 8]. Its sigmoid inherits the i-exp error at -|x| (which halves every
// ln2 step, <= 1.30e-3 2^-z) damped by d sigmoid / de = 1 / (1 + e)^2, then x multiplies it:
// the peak is at |x| = 1.386 (= 2 ln2, where z steps from 1 to 2). Measured 5.24e-4..5.44e-4
// at S = 1e-4, 1e-3, 8/127, 16/127 (plus <= |x| 2^-17 of sigmoid rounding at K = 16). Bound: a
// little above.
constexpr double kISiluMaxError = 6e-4;

// ---- Bit-exact values --------------------------------------------------------------------

// The integer ops are exact, so their outputs are pinned: these codes come from a separate
// Python transcription of the formulas in intonly_ops.h (math.floor of the same double
// quotients, Python's exact big integers, >> and // for the shifts and divisions). A change
// of any constant, rounding or shift shows up here even when it stays within the error bounds.
TEST(IntOnlyGolden, MatchesIndependentTranscription) {
  struct ExpCase {
    double s;
    int shift;
    std::vector<int64_t> want;  // at q = 0, -1, -777, -5000, -12345, -100000
  };
  const std::vector<int64_t> exp_q = {0, -1, -777, -5000, -12345, -100000};
  for (const ExpCase& ec : {ExpCase{1e-4, 0, {278969540, 278942561, 258609809, 169069540, 81105608, 12679}},
                            ExpCase{1e-3, 4, {714205193, 713514729, 329036008, 4824290, 3104, 0}},
                            ExpCase{8.0 / 127, 10, {737226806, 693362742, 0, 0, 0, 0}}}) {
    const IExpConstants c = iexp_constants(ec.s);
    EXPECT_EQ(c.in_shift, ec.shift) << ec.s;
    for (size_t i = 0; i < exp_q.size(); ++i) EXPECT_EQ(iexp(exp_q[i], c), ec.want[i]) << ec.s << " q " << exp_q[i];
  }
  const std::vector<int64_t> gelu_q = {-100, -37, -1, 0, 1, 37, 100};
  const IGeluConstants g1 = igelu_constants(4.0 / 127);
  EXPECT_EQ(g1.in_shift, 6);
  EXPECT_EQ(g1.q_b, -5261);
  EXPECT_EQ(g1.q_one, 32069068);
  const std::vector<int64_t> gelu1 = {0, -309669613, -27008809, 0, 37129327, 2063441419, 6413813600};
  const IGeluConstants g2 = igelu_constants(1e-3);
  EXPECT_EQ(g2.q_b, -5178);
  EXPECT_EQ(g2.q_one, 31066971);
  const std::vector<int64_t> gelu2 = {-2478048400, -963880192, -26790976, 0, 35342966, 1335075662, 3735345800};
  for (size_t i = 0; i < gelu_q.size(); ++i) {
    EXPECT_EQ(igelu(gelu_q[i], g1), gelu1[i]) << gelu_q[i];
    EXPECT_EQ(igelu(gelu_q[i], g2), gelu2[i]) << gelu_q[i];
  }
  const ISiluConstants sc = isilu_constants(1e-3, 16);
  EXPECT_EQ(sc.q_one, 715090590);
  const std::vector<int64_t> silu_q = {-5000, -1234, -1, 0, 1, 1234, 5000};
  const std::vector<int64_t> silu = {-2195000, -18206436, -32732, 0, 32804, 62664988, 325485000};
  for (size_t i = 0; i < silu_q.size(); ++i) EXPECT_EQ(isilu(silu_q[i], sc), silu[i]) << silu_q[i];
}

// ---- Dyadic -------------------------------------------------------------------------------

TEST(IntOnlyDyadic, FromRealIsNormalizedAndAccurate) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> log2_mult(-60.0, 30.0);
  std::vector<double> mults = {
      1.0,          0.5,  0.75,   1.0 / 3, 0x1p30, 0x1p-64, std::nextafter(1.0, 0.0), std::nextafter(0x1p30, 0.0),
      0.0009765625, 1e-9, 123.456};
  for (int i = 0; i < 100000; ++i) mults.push_back(std::exp2(log2_mult(rng)));
  double worst = 0;
  for (double mult : mults) {
    const Dyadic d = dyadic_from_real(mult);
    ASSERT_GE(d.m, int32_t{1} << 30) << mult;
    ASSERT_GE(d.shift, 0) << mult;
    ASSERT_LE(d.shift, 95) << mult;
    const double rel = std::fabs(dyadic_value(d) / mult - 1);
    worst = std::fmax(worst, rel);
    ASSERT_LE(rel, kDyadicRelError) << mult;
  }
  std::printf("dyadic: max relative error %.3e (2^-31 = %.3e)\n", worst, 0x1p-31);
  EXPECT_EQ(dyadic_from_real(0.0).m, 0);
  EXPECT_EQ(dyadic_from_real(0x1p-65).m, 0);
  EXPECT_EQ(requantize(INT64_MAX, dyadic_from_real(0x1p-65)), 0);
  EXPECT_THROW(dyadic_from_real(-1.0), Error);
  EXPECT_THROW(dyadic_from_real(std::nan("")), Error);
  EXPECT_THROW(dyadic_from_real(std::numeric_limits<double>::infinity()), Error);
  EXPECT_THROW(dyadic_from_real(0x1p31), Error);
}

TEST(IntOnlyDyadic, RequantizeRoundsHalfAwayFromZero) {
  const Dyadic half{int32_t{1} << 30, 31};  // exactly 0.5
  EXPECT_EQ(requantize(1, half), 1);
  EXPECT_EQ(requantize(-1, half), -1);
  EXPECT_EQ(requantize(3, half), 2);
  EXPECT_EQ(requantize(-3, half), -2);
  EXPECT_EQ(requantize(5, half), 3);
  EXPECT_EQ(requantize(-5, half), -3);
  EXPECT_EQ(requantize(4, half), 2);
  EXPECT_EQ(requantize(0, half), 0);
  const Dyadic quarter{int32_t{1} << 30, 32};  // 0.25: 1.25 -> 1, 1.5 -> 2, 1.75 -> 2
  EXPECT_EQ(requantize(5, quarter), 1);
  EXPECT_EQ(requantize(6, quarter), 2);
  EXPECT_EQ(requantize(-6, quarter), -2);
  EXPECT_EQ(requantize(7, quarter), 2);
  // Saturation.
  const Dyadic big = dyadic_from_real(0x1p20);
  EXPECT_EQ(requantize(int64_t{1} << 40, big), INT32_MAX);
  EXPECT_EQ(requantize(-(int64_t{1} << 40), big), INT32_MIN);
  EXPECT_EQ(requantize_wide(int64_t{1} << 40, big), int64_t{1} << 60);
  EXPECT_EQ(requantize_wide(INT64_MAX, big), INT64_MAX);
  EXPECT_EQ(requantize_wide(INT64_MIN, big), INT64_MIN);
}

TEST(IntOnlyDyadic, RequantizeMatchesExactRounding) {
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> log2_mult(-24.0, 4.0);
  std::uniform_int_distribution<int64_t> acc32(INT32_MIN, INT32_MAX);
  std::uniform_int_distribution<int64_t> acc33(-(int64_t{1} << 33), int64_t{1} << 33);
  int64_t off_by_one = 0;
  for (int i = 0; i < 200000; ++i) {
    const double mult = std::exp2(log2_mult(rng));
    const Dyadic d = dyadic_from_real(mult);
    const int64_t acc = (i & 1) ? acc32(rng) : acc33(rng);
    // acc m < 2^64 and the division by 2^shift are exact in long double (64-bit mantissa);
    // llroundl rounds half away from zero: the exact reference for the dyadic.
    const long double exact = std::ldexp(static_cast<long double>(acc) * d.m, -d.shift);
    const int64_t want = std::llroundl(exact);
    ASSERT_EQ(requantize_wide(acc, d), want) << acc << " * " << mult;
    // Against the real multiplier: m / 2^shift is off it by <= 2^-31 relative, so the result
    // is within 1 + |acc mult| 2^-31 of round(acc mult): within 1 while |acc mult| < 2^30.
    const long double real = static_cast<long double>(acc) * mult;
    const int64_t ideal = std::llroundl(real);
    const int64_t diff = std::llabs(requantize_wide(acc, d) - ideal);
    ASSERT_LE(static_cast<double>(diff), 1 + std::fabs(static_cast<double>(real)) * 0x1p-31) << acc << " * " << mult;
    if (std::fabs(static_cast<double>(real)) < 0x1p30) {
      ASSERT_LE(diff, 1) << acc << " * " << mult;
      off_by_one += diff != 0;
    }
  }
  std::printf("requantize: %lld of 200000 (those with |acc mult| < 2^30) differ by 1 from round(acc * mult)\n",
              static_cast<long long>(off_by_one));
}

TEST(IntOnlyDyadic, ArraysSaturate) {
  const std::vector<int32_t> acc = {0, 100, -100, 255, -257, 70000, -70000, INT32_MAX, INT32_MIN};
  const Dyadic half = dyadic_from_real(0.5);
  std::vector<int8_t> o8(acc.size());
  std::vector<int16_t> o16(acc.size());
  std::vector<int32_t> o32(acc.size());
  ASSERT_EQ(requantize_array(acc.data(), static_cast<int64_t>(acc.size()), half, o8.data()), KernelStatus::Ok);
  ASSERT_EQ(requantize_array(acc.data(), static_cast<int64_t>(acc.size()), half, o16.data()), KernelStatus::Ok);
  ASSERT_EQ(requantize_array(acc.data(), static_cast<int64_t>(acc.size()), half, o32.data()), KernelStatus::Ok);
  const std::vector<int8_t> w8 = {0, 50, -50, 127, -128, 127, -128, 127, -128};
  const std::vector<int16_t> w16 = {0, 50, -50, 128, -129, 32767, -32768, 32767, -32768};
  const std::vector<int32_t> w32 = {0, 50, -50, 128, -129, 35000, -35000, 1073741824, -1073741824};
  EXPECT_EQ(o8, w8);
  EXPECT_EQ(o16, w16);
  EXPECT_EQ(o32, w32);
  const std::vector<int64_t> acc64 = {int64_t{1} << 40, -(int64_t{1} << 40), 7};
  ASSERT_EQ(requantize_array(acc64.data(), 3, half, o32.data()), KernelStatus::Ok);
  EXPECT_EQ(o32[0], INT32_MAX);
  EXPECT_EQ(o32[1], INT32_MIN);
  EXPECT_EQ(o32[2], 4);
  EXPECT_EQ(requantize_array(static_cast<const int32_t*>(nullptr), 3, half, o8.data()), KernelStatus::InvalidArgument);
  EXPECT_EQ(requantize_array(acc.data(), -1, half, o8.data()), KernelStatus::InvalidArgument);
  EXPECT_EQ(requantize_array(static_cast<const int32_t*>(nullptr), 0, half, static_cast<int8_t*>(nullptr)),
            KernelStatus::Ok);
}

// The per-token power-of-two quantizer: the smallest shift that fits 127 (checked against
// the real-valued rule, and that one shift less overflows), codes rounded half away from zero
// within half a step, edge rows, and refusals.
TEST(IntOnlyTokenPow2, SmallestShiftAndRoundedCodes) {
  const auto shift_of = [](std::vector<int32_t> row) {
    std::vector<int8_t> out(row.size());
    return quantize_token_pow2(row.data(), static_cast<int64_t>(row.size()), out.data());
  };
  EXPECT_EQ(shift_of({0, 0, 0}), 0);
  EXPECT_EQ(shift_of({127, -127}), 0);
  EXPECT_EQ(shift_of({128}), 1);         // 64
  EXPECT_EQ(shift_of({-254}), 1);        // -127
  EXPECT_EQ(shift_of({255}), 2);         // 127.5 rounds to 128: one more
  EXPECT_EQ(shift_of({INT32_MIN}), 25);  // 2^31 / 2^25 = 64
  EXPECT_EQ(shift_of({INT32_MAX}), 25);
  std::vector<int8_t> out(1);
  EXPECT_EQ(quantize_token_pow2(nullptr, 1, out.data()), -1);
  const int32_t one = 1;
  EXPECT_EQ(quantize_token_pow2(&one, 0, out.data()), -1);
  EXPECT_EQ(quantize_token_pow2(&one, 1, nullptr), -1);

  std::mt19937 rng(11);
  for (int trial = 0; trial < 2000; ++trial) {
    const int64_t n = 1 + trial % 97;
    const int magnitude = trial % 31;  // rows from a few codes to near the int32 limit
    std::uniform_int_distribution<int64_t> value(-(int64_t{1} << magnitude), int64_t{1} << magnitude);
    std::vector<int32_t> x(static_cast<size_t>(n));
    for (auto& v : x) v = static_cast<int32_t>(std::clamp<int64_t>(value(rng), INT32_MIN, INT32_MAX));
    std::vector<int8_t> q(x.size());
    const int k = quantize_token_pow2(x.data(), n, q.data());
    ASSERT_GE(k, 0);
    int64_t top = 0;
    for (int32_t v : x) top = std::max<int64_t>(top, std::abs(int64_t{v}));
    // Smallest: round(top / 2^k) <= 127 < round(top / 2^(k-1)).
    EXPECT_LE(std::round(std::ldexp(static_cast<double>(top), -k)), 127.0) << trial;
    if (k > 0) {
      EXPECT_GT(std::round(std::ldexp(static_cast<double>(top), -(k - 1))), 127.0) << trial;
    }
    for (int64_t i = 0; i < n; ++i) {
      const double exact = std::ldexp(static_cast<double>(x[static_cast<size_t>(i)]), -k);
      EXPECT_LE(std::abs(q[static_cast<size_t>(i)] - exact), 0.5) << trial;
      EXPECT_LE(std::abs(int{q[static_cast<size_t>(i)]}), 127) << trial;
    }
  }
}

TEST(IntOnlyDyadic, PerChannelMatchesScalarRequantize) {
  const int64_t m = 3, cols = 37, acc_stride = 40, out_stride = 41;
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int32_t> acc_dist(-3000000, 3000000);
  std::uniform_real_distribution<double> log2_mult(-20.0, -12.0);
  std::vector<int32_t> acc(m * acc_stride);
  for (auto& v : acc) v = acc_dist(rng);
  std::vector<Dyadic> d(cols);
  for (auto& v : d) v = dyadic_from_real(std::exp2(log2_mult(rng)));
  std::vector<int8_t> o8(m * out_stride, 99);
  std::vector<int32_t> o32(m * out_stride, 99);
  ASSERT_EQ(requantize_per_channel(acc.data(), m, cols, acc_stride, d.data(), o8.data(), out_stride), KernelStatus::Ok);
  ASSERT_EQ(requantize_per_channel(acc.data(), m, cols, acc_stride, d.data(), o32.data(), out_stride),
            KernelStatus::Ok);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < out_stride; ++j) {
      if (j >= cols) {  // padding untouched
        ASSERT_EQ(o8[i * out_stride + j], 99);
        ASSERT_EQ(o32[i * out_stride + j], 99);
        continue;
      }
      const int64_t want = requantize_wide(acc[i * acc_stride + j], d[j]);
      ASSERT_EQ(o32[i * out_stride + j], want);
      ASSERT_EQ(o8[i * out_stride + j], saturate_int8(want));
    }
  }
  EXPECT_EQ(requantize_per_channel(acc.data(), m, cols, cols - 1, d.data(), o8.data(), out_stride),
            KernelStatus::InvalidArgument);
  EXPECT_EQ(requantize_per_channel(acc.data(), m, cols, acc_stride, nullptr, o8.data(), out_stride),
            KernelStatus::InvalidArgument);
}

// ---- Integer square root ------------------------------------------------------------------

void expect_isqrt(uint64_t n) {
  const uint64_t r = isqrt_u64(n);
  const unsigned __int128 r2 = static_cast<unsigned __int128>(r) * r;
  const unsigned __int128 r1 = static_cast<unsigned __int128>(r) + 1;
  ASSERT_TRUE(r2 <= n && n < r1 * r1) << "isqrt(" << n << ") = " << r;
}

TEST(IntOnlyIsqrt, EdgeCases) {
  for (uint64_t n : {0ull, 1ull, 2ull, 3ull, 4ull, 5ull, 8ull, 9ull, 10ull, 15ull, 16ull, 17ull}) expect_isqrt(n);
  EXPECT_EQ(isqrt_u64(0), 0u);
  EXPECT_EQ(isqrt_u64(1), 1u);
  EXPECT_EQ(isqrt_u64(3), 1u);
  EXPECT_EQ(isqrt_u64(4), 2u);
  for (int k = 1; k <= 63; ++k) {
    const uint64_t p = uint64_t{1} << k;
    expect_isqrt(p);
    expect_isqrt(p - 1);
    expect_isqrt(p + 1);
  }
  expect_isqrt((uint64_t{1} << 31) - 1);
  expect_isqrt((uint64_t{1} << 32) - 1);
  expect_isqrt(UINT64_MAX);
  EXPECT_EQ(isqrt_u64(UINT64_MAX), 4294967295u);
  // Perfect squares k^2 and k^2 +- 1 near the top (k up to 2^32 - 1) and at the bottom.
  for (uint64_t k = 4294967295u; k > 4294967295u - 5000; --k) {
    const uint64_t sq = k * k;
    EXPECT_EQ(isqrt_u64(sq), k);
    EXPECT_EQ(isqrt_u64(sq - 1), k - 1);
    expect_isqrt(sq + 1);
  }
  for (uint64_t k = 2; k < 100000; ++k) {
    ASSERT_EQ(isqrt_u64(k * k), k);
    ASSERT_EQ(isqrt_u64(k * k - 1), k - 1);
  }
}

TEST(IntOnlyIsqrt, RandomUint64) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 1000000; ++i) {
    const uint64_t r = rng();
    expect_isqrt(r);
    expect_isqrt(r >> (r % 64));  // every bit length, not just ~2^63
  }
}

TEST(IntOnlyIsqrt, Uint128) {
  auto check = [](unsigned __int128 n) {
    const uint64_t r = isqrt_u128(n);
    const unsigned __int128 r2 = static_cast<unsigned __int128>(r) * r;
    ASSERT_LE(r2, n);
    if (r < UINT64_MAX) {
      const unsigned __int128 r1 = static_cast<unsigned __int128>(r) + 1;
      ASSERT_LT(n, r1 * r1);
    }
  };
  const unsigned __int128 all = ~static_cast<unsigned __int128>(0);
  check(all);
  EXPECT_EQ(isqrt_u128(all), UINT64_MAX);
  for (int k = 0; k < 128; ++k) {
    const unsigned __int128 p = static_cast<unsigned __int128>(1) << k;
    check(p);
    check(p - 1);
    check(p + 1);
  }
  std::mt19937_64 rng(4);
  for (int i = 0; i < 200000; ++i) {
    const unsigned __int128 n = (static_cast<unsigned __int128>(rng()) << 64) | rng();
    check(n >> (rng() % 128));
    const uint64_t k = rng();
    const unsigned __int128 sq = static_cast<unsigned __int128>(k) * k;
    ASSERT_EQ(isqrt_u128(sq), k);
    if (k > 0) {
      ASSERT_EQ(isqrt_u128(sq - 1), k - 1);
    }
  }
}

// ---- i-exp --------------------------------------------------------------------------------

// Every code q with q S in [lo, 0].
template <typename Fn>
void for_codes_down_to(double lo, double s, const Fn& fn) {
  for (int64_t q = 0; static_cast<double>(q) * s >= lo; --q) fn(q, static_cast<double>(q) * s);
}

TEST(IntOnlyIExp, AbsErrorOnOneLn2Period) {
  // S = 1e-4: 6931 codes per ln2, so the floors of ln2/S, b/S, c/(a S^2) (each < 1 code, i.e.
  // < 1e-4 in p or < a S^2 ~ 4e-9 in the result; the b/S one moves the result by < 1e-4) are
  // well below the polynomial's 1.24e-3 and the grid samples p every 1e-4, finer than the
  // polynomial's error varies.
  for (double s : {1e-4, 1e-3, 4.0 / 127, 8.0 / 127}) {
    const IExpConstants c = iexp_constants(s);
    double worst = 0;
    for_codes_down_to(-std::numbers::ln2 + 1e-12, s, [&](int64_t q, double x) {
      worst = std::fmax(worst, std::fabs(static_cast<double>(iexp(q, c)) * c.out_scale - std::exp(x)));
    });
    std::printf("i-exp S=%.6g (internal shift %d): max abs error on (-ln2, 0] %.4e\n", s, c.in_shift, worst);
    EXPECT_LE(worst, kIExpMaxAbsError) << s;
  }
}

TEST(IntOnlyIExp, RelErrorDownToMinus10) {
  for (double s : {1e-4, 1e-3, 4.0 / 127, 8.0 / 127, 0x1p-20}) {
    const IExpConstants c = iexp_constants(s);
    double worst_rel = 0, worst_abs = 0;
    for_codes_down_to(-10.0, s, [&](int64_t q, double x) {
      const double got = static_cast<double>(iexp(q, c)) * c.out_scale, want = std::exp(x);
      worst_rel = std::fmax(worst_rel, std::fabs(got / want - 1));
      worst_abs = std::fmax(worst_abs, std::fabs(got - want));
    });
    std::printf("i-exp S=%.6g: on [-10, 0] max relative error %.4e, max abs error %.4e\n", s, worst_rel, worst_abs);
    EXPECT_LE(worst_rel, kIExpMaxRelError) << s;
    EXPECT_LE(worst_abs, kIExpMaxAbsError) << s;
  }
}

TEST(IntOnlyIExp, ExtremesAndConstants) {
  const IExpConstants c = iexp_constants(1e-3);
  EXPECT_EQ(iexp(0, c), c.q_b * c.q_b + c.q_c);
  EXPECT_EQ(iexp(5, c), iexp(0, c));  // positive inputs clamp to 0
  EXPECT_EQ(iexp(-100000, c), 0);     // exp(-100) underflows the code
  EXPECT_EQ(iexp(INT32_MIN, c), 0);
  EXPECT_EQ(iexp(INT64_MIN, c), 0);
  const IExpConstants c4 = iexp_constants(1e-4);  // in [2^-20, 2^-13]: the paper's formulas
  EXPECT_EQ(c4.in_shift, 0);
  EXPECT_EQ(c4.q_ln2, 6931);
  EXPECT_EQ(c4.q_b, 13490);
  EXPECT_EQ(c4.q_c, static_cast<int64_t>(std::floor(kIExpC / (kIExpA * 1e-8))));
  EXPECT_THROW(iexp_constants(0.0), Error);
  EXPECT_THROW(iexp_constants(0x1p21), Error);
  EXPECT_THROW(iexp_constants(std::nan("")), Error);
}

// ---- i-softmax ----------------------------------------------------------------------------

std::vector<double> float_softmax(const std::vector<int32_t>& q, double s) {
  double mx = -1e300, sum = 0;
  for (int32_t v : q) mx = std::fmax(mx, v * s);
  std::vector<double> y(q.size());
  for (size_t i = 0; i < q.size(); ++i) sum += y[i] = std::exp(q[i] * s - mx);
  for (double& v : y) v /= sum;
  return y;
}

TEST(IntOnlySoftmax, RandomRowsMatchFloatSoftmax) {
  // Logits in [-5, 5]: every exponent lies in [-10, 0], where i-exp's relative error is
  // <= rho = kIExpMaxRelError. With e_j = exp(x_j)(1 + d_j), |d_j| <= rho, the ratio
  // e_i / sum e is off softmax_i by <= softmax_i 2 rho / (1 - rho); the final rounding adds
  // 2^-(k+1). The sum of the outputs is off 1 by the roundings only: <= n 2^-(k+1).
  const double rho = kIExpMaxRelError;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> logit(-5.0, 5.0);
  struct Case {
    double s;
    int k;
  };
  for (const Case cs : {Case{1e-3, 15}, Case{1e-4, 15}, Case{1e-3, 8}, Case{0x1p-20, 30}, Case{0.05, 15}}) {
    const IExpConstants c = iexp_constants(cs.s);
    const double ulp = std::ldexp(1.0, -cs.k);
    const double bound = 2 * rho / (1 - rho) + ulp / 2;
    double worst = 0, worst_sum = 0;
    for (int64_t n : {1, 2, 7, 64, 1000}) {
      for (int row = 0; row < 20; ++row) {
        std::vector<int32_t> q(n);
        for (auto& v : q) v = static_cast<int32_t>(std::lround(logit(rng) / cs.s));
        std::vector<int32_t> out(n);
        ASSERT_EQ(isoftmax_row(q.data(), n, c, cs.k, out.data()), KernelStatus::Ok);
        const std::vector<double> want = float_softmax(q, cs.s);
        double sum = 0;
        for (int64_t i = 0; i < n; ++i) {
          sum += out[i] * ulp;
          worst = std::fmax(worst, std::fabs(out[i] * ulp - want[i]));
        }
        const double sum_err = std::fabs(sum - 1);
        worst_sum = std::fmax(worst_sum, sum_err / (n * ulp / 2));
        ASSERT_LE(sum_err, n * ulp / 2 + 1e-12) << "n " << n << " S " << cs.s;
        if (n == 1) {
          ASSERT_EQ(out[0], int32_t{1} << cs.k);
        }
      }
    }
    std::printf("i-softmax S=%.6g k=%d: max abs error %.4e (bound %.4e), sum error <= %.2f of its bound\n", cs.s, cs.k,
                worst, bound, worst_sum);
    EXPECT_LE(worst, bound);
  }
}

TEST(IntOnlySoftmax, NarrowOutputsSaturateAtOne) {
  const IExpConstants c = iexp_constants(1e-3);
  const std::vector<int32_t> q = {20000, 0, -3000};  // softmax ~ (1, 2e-9, 1e-10)
  std::vector<uint8_t> o8(3);
  std::vector<int16_t> o16(3);
  ASSERT_EQ(isoftmax_row_u8(q.data(), 3, c, o8.data()), KernelStatus::Ok);
  ASSERT_EQ(isoftmax_row_i16(q.data(), 3, c, o16.data()), KernelStatus::Ok);
  EXPECT_EQ(o8[0], 255);
  EXPECT_EQ(o8[1], 0);
  EXPECT_EQ(o8[2], 0);
  EXPECT_EQ(o16, (std::vector<int16_t>{32767, 0, 0}));
  const std::vector<int32_t> even = {7, 7, 7, 7};
  o8.resize(4);
  ASSERT_EQ(isoftmax_row_u8(even.data(), 4, c, o8.data()), KernelStatus::Ok);
  EXPECT_EQ(o8[0], 64);
  EXPECT_EQ(o8[3], 64);
  std::vector<int32_t> o32(3);
  EXPECT_EQ(isoftmax_row(q.data(), 0, c, 15, o32.data()), KernelStatus::InvalidArgument);
  EXPECT_EQ(isoftmax_row(q.data(), 3, c, 31, o32.data()), KernelStatus::InvalidArgument);
  EXPECT_EQ(isoftmax_row(nullptr, 3, c, 15, o32.data()), KernelStatus::InvalidArgument);
}

// ---- Integer RMSNorm ----------------------------------------------------------------------

struct RmsCase {
  int64_t n;
  bool int8_input;
  double eps;
  double x_scale_mul;  // x ~ N(0, 1) * x_scale_mul, plus one outlier channel
};

TEST(IntOnlyRmsNorm, MatchesFloatRmsNormWithinDerivedBound) {
  std::mt19937_64 rng(6);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> gain(0.2, 2.0);
  for (const RmsCase& rc :
       {RmsCase{256, true, 1e-5, 1.0}, RmsCase{4096, true, 1e-6, 0.05}, RmsCase{4096, false, 1e-5, 1.0},
        RmsCase{576, false, 1e-5, 0.002}, RmsCase{64, true, 1e-5, 1e-4}}) {
    for (int frac_bits : {8, 16}) {
      std::vector<double> x(rc.n);
      for (auto& v : x) v = normal(rng) * rc.x_scale_mul;
      x[rc.n / 3] *= 30;  // an outlier channel, as in LLaMA hidden states
      double amax = 0;
      for (double v : x) amax = std::fmax(amax, std::fabs(v));
      const double s = amax / (rc.int8_input ? 127.0 : 1048576.0);
      std::vector<int8_t> q8(rc.n);
      std::vector<int32_t> q32(rc.n);
      for (int64_t i = 0; i < rc.n; ++i) {
        q32[i] = static_cast<int32_t>(std::lround(x[i] / s));
        q8[i] = static_cast<int8_t>(q32[i]);
      }
      std::vector<float> g(rc.n);
      for (auto& v : g) v = static_cast<float>(gain(rng));
      std::vector<int16_t> qg(rc.n);
      const double sg = quantize_gain_int16(g.data(), rc.n, qg.data());
      const IRmsNormConstants c = irmsnorm_constants(s, rc.eps, frac_bits, 8);
      std::vector<int32_t> out(rc.n);
      ASSERT_EQ(rc.int8_input ? irmsnorm_row(q8.data(), rc.n, qg.data(), c, out.data())
                              : irmsnorm_row(q32.data(), rc.n, qg.data(), c, out.data()),
                KernelStatus::Ok);
      // Reference on the dequantized input and gain (the op's own error, not the inputs').
      double ms = 0;
      for (int32_t v : q32) ms += (v * s) * (v * s);
      ms /= static_cast<double>(rc.n);
      const double inv_rms = 1 / std::sqrt(ms + rc.eps);
      // D ~= 2^P sqrt(ms + eps) / S is off by < 1 + 1.5/(2D) (floors, eps rounding): relative
      // error eps_D <= 2/D for D >= 2; the output's rounding adds half an output ulp.
      const double d = std::ldexp(std::sqrt(ms + rc.eps) / s, frac_bits);
      const double eps_d = 2 / d;
      const double out_scale = std::ldexp(sg, -c.out_frac_bits);
      double worst = 0, worst_ratio = 0;
      for (int64_t i = 0; i < rc.n; ++i) {
        const double want = q32[i] * s * inv_rms * qg[i] * sg;
        const double err = std::fabs(out[i] * out_scale - want);
        const double bound = std::fabs(want) * eps_d / (1 - eps_d) + out_scale / 2;
        worst = std::fmax(worst, err);
        worst_ratio = std::fmax(worst_ratio, err / bound);
        ASSERT_LE(err, bound) << "i " << i << " n " << rc.n << " P " << frac_bits;
      }
      std::printf("i-RMSNorm n=%lld %s eps=%g P=%d: D=%.4g, max abs error %.3e (%.2f of the bound)\n",
                  static_cast<long long>(rc.n), rc.int8_input ? "int8" : "int32", rc.eps, frac_bits, d, worst,
                  worst_ratio);
      // The int8 variant: out_int8 = round(out * (S_g 2^-F / S_o)).
      const double s_o = amax * inv_rms * 2.0 / 127;  // |y| <= amax inv_rms max g (2)
      const Dyadic to8 = dyadic_from_real(out_scale / s_o);
      std::vector<int8_t> o8(rc.n);
      if (!rc.int8_input) {
        ASSERT_EQ(irmsnorm_row_int8(q32.data(), rc.n, qg.data(), c, to8, o8.data()), KernelStatus::Ok);
        for (int64_t i = 0; i < rc.n; ++i) ASSERT_EQ(o8[i], saturate_code8(requantize_wide(out[i], to8)));
      }
    }
  }
}

// The int8 codes feed the int8 GEMMs, whose AVX2 and AVX-512BW kernels take codes in
// [-127, 127] only: a row normalized far past the int8 range saturates at -127 and 127, not
// -128 (which came out of those kernels negated wrongly: integer-only checkpoints drifted
// 12-36 % per layer on CPUs without VNNI).
TEST(IntOnlyRmsNorm, Int8CodesSaturateSymmetrically) {
  const std::vector<int32_t> q = {-1000, 1000, -1000, 1000, -500, 500, 0, 1};
  const std::vector<int16_t> g(q.size(), 16384);
  std::vector<int8_t> out(q.size());
  ASSERT_EQ(irmsnorm_row_int8(q.data(), static_cast<int64_t>(q.size()), g.data(), irmsnorm_constants(0.01, 0.0),
                              dyadic_from_real(1.0), out.data()),
            KernelStatus::Ok);
  EXPECT_EQ(out[0], -127);
  EXPECT_EQ(out[1], 127);
  for (int8_t v : out) EXPECT_GE(v, -127);
  EXPECT_EQ(saturate_code8(-128), -127);
  EXPECT_EQ(saturate_code8(-1000), -127);
  EXPECT_EQ(saturate_code8(1000), 127);
  EXPECT_EQ(saturate_code8(-5), -5);
}

TEST(IntOnlyRmsNorm, ZeroRowAndArguments) {
  const std::vector<int32_t> q(16, 0);
  const std::vector<int16_t> g(16, 1000);
  std::vector<int32_t> out(16, 5);
  ASSERT_EQ(irmsnorm_row(q.data(), 16, g.data(), irmsnorm_constants(0.01, 0.0), out.data()), KernelStatus::Ok);
  EXPECT_EQ(out, std::vector<int32_t>(16, 0));
  out.assign(16, 5);
  ASSERT_EQ(irmsnorm_row(q.data(), 16, g.data(), irmsnorm_constants(0.01, 1e-5), out.data()), KernelStatus::Ok);
  EXPECT_EQ(out, std::vector<int32_t>(16, 0));
  EXPECT_EQ(irmsnorm_row(q.data(), 0, g.data(), IRmsNormConstants{}, out.data()), KernelStatus::InvalidArgument);
  EXPECT_EQ(irmsnorm_row(q.data(), 16, nullptr, IRmsNormConstants{}, out.data()), KernelStatus::InvalidArgument);
  EXPECT_THROW(irmsnorm_constants(0.0, 1e-5), Error);
  EXPECT_THROW(irmsnorm_constants(0.01, -1.0), Error);
  EXPECT_THROW(irmsnorm_constants(0.01, 1e-5, 25), Error);
  EXPECT_THROW(irmsnorm_constants(1e-12, 1.0), Error);  // q_eps would not fit
  // Extreme int32 codes: no overflow anywhere, outputs saturate only beyond int32.
  const std::vector<int32_t> big = {INT32_MIN, INT32_MAX, 0, 1};
  const std::vector<int16_t> g4 = {32767, 32767, 32767, -32767};
  std::vector<int32_t> o4(4);
  ASSERT_EQ(irmsnorm_row(big.data(), 4, g4.data(), irmsnorm_constants(1.0, 0.0, 24, 8), o4.data()), KernelStatus::Ok);
  double ms = 0;
  for (int32_t v : big) ms += static_cast<double>(v) * v;
  const double rms = std::sqrt(ms / 4);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(o4[i], big[i] / rms * g4[i] * 256, 1.0) << i;
}

// ---- i-GELU -------------------------------------------------------------------------------

double gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::numbers::sqrt2)); }

TEST(IntOnlyGelu, MaxErrorOnMinus4To4) {
  for (double s : {4.0 / 127, 8.0 / 127, 1e-3, 1e-4, 0x1p-20}) {
    const IGeluConstants c = igelu_constants(s);
    double worst = 0, at = 0;
    for (int64_t q = static_cast<int64_t>(std::ceil(-4 / s)); static_cast<double>(q) * s <= 4; ++q) {
      const double x = static_cast<double>(q) * s;
      const double err = std::fabs(static_cast<double>(igelu(q, c)) * c.out_scale - gelu(x));
      if (err > worst) worst = err, at = x;
    }
    std::printf("i-GELU S=%.6g (internal shift %d): max abs error on [-4, 4] %.4e at x = %.4f\n", s, c.in_shift, worst,
                at);
    EXPECT_LE(worst, kIGeluMaxError) << s;
  }
}

TEST(IntOnlyGelu, TailsAndArray) {
  const double s = 4.0 / 127;
  const IGeluConstants c = igelu_constants(s);
  // |x / sqrt2| >= 1.830621: L = +-1 exactly, so GELU = x (x > 0) or 0 (x < 0) up to the
  // floor of 1 / (|a| S'^2).
  const int64_t q = 127;  // x = 4
  EXPECT_EQ(igelu(-q, c), 0);
  EXPECT_NEAR(static_cast<double>(igelu(q, c)) * c.out_scale, 4.0, 4.0 / c.q_one);
  EXPECT_EQ(igelu(0, c), 0);
  const std::vector<int32_t> in = {INT32_MIN, -100, -1, 0, 1, 50, INT32_MAX};
  std::vector<int64_t> out(in.size());
  ASSERT_EQ(igelu_array(in.data(), static_cast<int64_t>(in.size()), c, out.data()), KernelStatus::Ok);
  for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(out[i], igelu(in[i], c));
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out.back(), int64_t{INT32_MAX} * 2 * c.q_one);
  const IGeluConstants fine = igelu_constants(0x1p-20);  // s < 0: q >> 6 inside the erf
  EXPECT_EQ(fine.in_shift, -6);
  EXPECT_GT(igelu(INT32_MAX, fine), 0);  // 2^31 * 2 q_one < 2^63
}

// ---- Integer SiLU -------------------------------------------------------------------------

TEST(IntOnlySilu, MaxErrorOnMinus8To8) {
  for (double s : {1e-3, 1e-4, 8.0 / 127, 16.0 / 127}) {
    const ISiluConstants c = isilu_constants(s, 16);
    double worst = 0, at = 0;
    for (int64_t q = static_cast<int64_t>(std::ceil(-8 / s)); static_cast<double>(q) * s <= 8; ++q) {
      const double x = static_cast<double>(q) * s;
      const double err = std::fabs(static_cast<double>(isilu(q, c)) * c.out_scale - x / (1 + std::exp(-x)));
      if (err > worst) worst = err, at = x;
    }
    std::printf("i-SiLU S=%.6g K=16: max abs error on [-8, 8] %.4e at x = %.4f\n", s, worst, at);
    EXPECT_LE(worst, kISiluMaxError) << s;
  }
}

TEST(IntOnlySilu, SigmoidSymmetryAndArray) {
  const ISiluConstants c = isilu_constants(1e-3, 16);
  for (int64_t q : {1, 10, 500, 1000, 5000, 20000, 1000000}) {
    // sigmoid(x) + sigmoid(-x) = (one + e) / (one + e) before rounding: within 1 after.
    // (Not at 0: q = 0 takes the x >= 0 branch, one / (one + iexp(0)) with iexp(0) ~= 0.9988.)
    EXPECT_LE(std::llabs(isigmoid(q, c) + isigmoid(-q, c) - (int64_t{1} << 16)), 1) << q;
  }
  EXPECT_EQ(isigmoid(1000000, c), int64_t{1} << 16);  // x = 1000
  EXPECT_EQ(isigmoid(-1000000, c), 0);
  const std::vector<int32_t> in = {INT32_MIN, -3000, -1, 0, 1, 3000, INT32_MAX};
  std::vector<int64_t> out(in.size());
  ASSERT_EQ(isilu_array(in.data(), static_cast<int64_t>(in.size()), c, out.data()), KernelStatus::Ok);
  for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(out[i], isilu(in[i], c));
  EXPECT_EQ(out.back(), int64_t{INT32_MAX} << 16);
  EXPECT_EQ(out[0], 0);
  EXPECT_THROW(isilu_constants(1e-3, 21), Error);
  EXPECT_EQ(isilu_array(nullptr, 3, c, out.data()), KernelStatus::InvalidArgument);
}

}  // namespace
}  // namespace fsq
