// Helpers shared by the intonly_*.cpp files (not part of the API).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "common/error.h"

namespace fsq::cpu::intonly_detail {

inline constexpr double kMinInScale = 0x1p-30, kMaxInScale = 0x1p20;

inline void check_in_scale(const char* where, double s) {
  if (!std::isfinite(s) || s < kMinInScale || s > kMaxInScale)
    throw Error(where, "input scale out of range", "[2^-30, 2^20]", std::to_string(s));
}

// The shift s with S 2^-s in [2^lo_exp, 2^hi_exp] (0 when S already is).
inline int pick_shift(double s, int lo_exp, int hi_exp) {
  int shift = 0;
  while (std::ldexp(s, -shift) > std::ldexp(1.0, hi_exp)) ++shift;
  while (std::ldexp(s, -shift) < std::ldexp(1.0, lo_exp)) --shift;
  return shift;
}

// q 2^s (s >= 0, the caller keeps it in range) or floor(q / 2^-s).
inline int64_t apply_shift(int64_t q, int s) { return s >= 0 ? q * (int64_t{1} << s) : q >> -s; }

}  // namespace fsq::cpu::intonly_detail
