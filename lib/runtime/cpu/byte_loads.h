// Little-endian loads of a few code bytes for the SIMD kernels. static: each TU keeps its
// own copy, compiled with its own -m flags (uniform_isa.h says why that matters).
#pragma once

#include <cstdint>
#include <cstring>

namespace fsq::cpu {

// Bytes p[0 .. nbytes) (nbytes <= 8) as an integer; reads nothing beyond.
static inline uint64_t load_bytes(const uint8_t* p, int64_t nbytes) {
  uint64_t v = 0;
  std::memcpy(&v, p, static_cast<size_t>(nbytes));
  return v;
}

// load_bytes for a constant count, which the compiler turns into one load.
template <int kBytes>
static inline uint64_t load_fixed(const uint8_t* p) {
  uint64_t v = 0;
  std::memcpy(&v, p, kBytes);
  return v;
}

}  // namespace fsq::cpu
