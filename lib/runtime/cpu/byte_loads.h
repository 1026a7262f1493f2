// Little-endian loads of a few code bytes for the SIMD kernels. static: each TU keeps its
// own copy, compiled with its own -m flags (uniform_isa.h says why that matters).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace fsq::cpu {

// Bytes p[0 .. nbytes) (nbytes <= 8) as an integer; reads nothing beyond.
static inline uint64_t load_bytes(const uint8_t* p, int64_t nbytes) {
  uint64_t v = 0;
  std::memcpy(&v, p, static_cast<size_t>(nbytes));
  return v;
}

// load_bytes for a constant count as one load, or two (3, 5, 6, 7 bytes: the low 2 or 4
// and the rest) combined in registers. A memcpy of 3 or 6 bytes into a zeroed uint64_t is
// two narrow stores and one wide reload on the stack, which store forwarding cannot serve:
// that stall made the 3-bit GEMV 9x slower than the 4-bit one.
template <int kBytes>
static inline uint64_t load_fixed(const uint8_t* p) {
  static_assert(kBytes >= 1 && kBytes <= 8);
  if constexpr (kBytes == 1 || kBytes == 2 || kBytes == 4 || kBytes == 8) {
    using Word = std::conditional_t<kBytes == 1, uint8_t,
                                    std::conditional_t<kBytes == 2, uint16_t, std::conditional_t<kBytes == 4, uint32_t, uint64_t>>>;
    Word v;
    std::memcpy(&v, p, kBytes);
    return v;
  } else {
    constexpr int kLow = kBytes > 4 ? 4 : 2;
    return load_fixed<kLow>(p) | load_fixed<kBytes - kLow>(p + kLow) << (8 * kLow);
  }
}

}  // namespace fsq::cpu
