// Software prefetch into L2 for the SIMD kernel loops (uniform_simd_loops.h says why they
// need it). static: each ISA file keeps its own copy, compiled with its own flags.
#pragma once

#include <cstdint>

namespace fsq::cpu {

inline constexpr int64_t kCacheLine = 64;

// Inlined on purpose: GCC deems a call whose body only prefetches free of effects and
// deletes it. Locality 2: prefetcht1, into L2. The streamed weights used prefetchnta until
// it was measured on Zen 4 (EPYC, family 25): there it halved the int8-activation GEMVs
// (bench_uniform_kernels, W4 g128 at 4096x4096 from DRAM, 1 thread: 51 % of read bandwidth
// with nta, 108 % with t1; bench_lut_kernels LUT-3: 47 % -> 80 %) and cost SmolLM2's W4
// decode a third; on the one machine where nta had won (SmolLM2 decode, 1 thread) it gained
// 2-5 %. Here f32 decode batch 1 is the same with either (37 tok/s), batch 8 25 % faster.
__attribute__((always_inline)) static inline void prefetch_to_l2(const void* p) { __builtin_prefetch(p, 0, 2); }

// base + bytes for a prefetch, computed as integers: the address may lie past the end of
// base's array (fine for a prefetch), where forming it as a pointer would be undefined.
__attribute__((always_inline)) static inline const char* address_ahead(const void* base, int64_t bytes) {
  return reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(base) + static_cast<uintptr_t>(bytes));
}

// The lines of [p + begin, p + end) that start a cache line counted from p (lines shared
// with the neighbouring range are left to it, or to the hardware).
__attribute__((always_inline)) static inline void prefetch_lines(const void* p, int64_t begin, int64_t end) {
  for (int64_t b = (begin + kCacheLine - 1) & ~(kCacheLine - 1); b < end; b += kCacheLine)
    prefetch_to_l2(static_cast<const char*>(p) + b);
}

// The CSR pass of the LUT GEMVs reads each row's columns and values as two short runs, too
// short for the hardware prefetcher to get ahead of: ask for the two lines of each run that
// lie kCsrPrefetchNonzeros further on. At 0.45 % nonzeros and 11008 columns, read from DRAM,
// this took the pass from about 98 to 85 us (4096 rows, 1 thread).
inline constexpr int64_t kCsrPrefetchNonzeros = 768;

template <typename Col>
__attribute__((always_inline)) static inline void prefetch_csr_ahead(const Col* col, const uint16_t* val,
                                                                     int64_t begin) {
  const char* c = address_ahead(col, (begin + kCsrPrefetchNonzeros) * int64_t{sizeof(Col)});
  const char* v = address_ahead(val, (begin + kCsrPrefetchNonzeros) * int64_t{sizeof(uint16_t)});
  prefetch_to_l2(c);
  prefetch_to_l2(address_ahead(c, kCacheLine));
  prefetch_to_l2(v);
  prefetch_to_l2(address_ahead(v, kCacheLine));
}

}  // namespace fsq::cpu
