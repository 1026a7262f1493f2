// The read-only bandwidth yardstick of the kernel benchmarks (bench_uniform_kernels,
// bench_lut_kernels): XOR of a buffer into independent accumulators with the widest vector
// loads the CPU has and software prefetch, split over OpenMP threads, so the loop is bound
// by loads, not by a dependency chain. A GEMV that reads its weights once can approach its
// bytes per second.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <map>
#include <vector>

#include "runtime/aligned_bytes.h"
#include "runtime/cpu/uniform_kernels.h"
#include "runtime/threads.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace fsq::bench {

// The vector loops ask for the lines 16 KiB ahead (prefetcht1), as the GEMVs do: without it
// this VM's 2-thread read reached ~29 GB/s, which the GEMVs beat (~38); with it ~43.
constexpr int64_t kReadPrefetchWords = 2048;

// XOR of words [0, n) (n a multiple of 32).
#if defined(__x86_64__)
__attribute__((target("avx512f"))) inline uint64_t xor_words_avx512(const uint64_t* p, int64_t n) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t i = 0; i < n; i += 32) {
    for (int64_t line = 0; line < 32; line += 8) __builtin_prefetch(p + i + kReadPrefetchWords + line, 0, 2);
    a0 = _mm512_xor_si512(a0, _mm512_loadu_si512(p + i));
    a1 = _mm512_xor_si512(a1, _mm512_loadu_si512(p + i + 8));
    a2 = _mm512_xor_si512(a2, _mm512_loadu_si512(p + i + 16));
    a3 = _mm512_xor_si512(a3, _mm512_loadu_si512(p + i + 24));
  }
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, _mm512_xor_si512(_mm512_xor_si512(a0, a1), _mm512_xor_si512(a2, a3)));
  uint64_t r = 0;
  for (uint64_t v : lanes) r ^= v;
  return r;
}

__attribute__((target("avx2"))) inline uint64_t xor_words_avx2(const uint64_t* p, int64_t n) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t i = 0; i < n; i += 16) {
    for (int64_t line = 0; line < 16; line += 8) __builtin_prefetch(p + i + kReadPrefetchWords + line, 0, 2);
    a0 = _mm256_xor_si256(a0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
    a1 = _mm256_xor_si256(a1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 4)));
    a2 = _mm256_xor_si256(a2, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 8)));
    a3 = _mm256_xor_si256(a3, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 12)));
  }
  alignas(32) uint64_t lanes[4];
  const __m256i all = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), all);
  return lanes[0] ^ lanes[1] ^ lanes[2] ^ lanes[3];
}
#endif

inline uint64_t xor_words_scalar(const uint64_t* p, int64_t n) {
  uint64_t a[8] = {};
  for (int64_t i = 0; i < n; i += 8)
    for (int j = 0; j < 8; ++j) a[j] ^= p[i + j];
  return a[0] ^ a[1] ^ a[2] ^ a[3] ^ a[4] ^ a[5] ^ a[6] ^ a[7];
}

using XorWordsFn = uint64_t (*)(const uint64_t*, int64_t);
inline XorWordsFn xor_words_for(cpu::CpuIsa isa) {
#if defined(__x86_64__)
  switch (isa) {
    case cpu::CpuIsa::Avx512: return xor_words_avx512;
    case cpu::CpuIsa::Avx2: return xor_words_avx2;
    case cpu::CpuIsa::Scalar: break;
  }
#endif
  return xor_words_scalar;
}

// The read kernel's buffer, in the huge-page weight memory the GEMVs' weights live in
// (runtime/weight_memory.h), so that the yardstick pays the same page walks as they do.
struct ReadBuffer {
  AlignedBytes bytes;
  int64_t words = 0;
  const uint64_t* data() const { return aligned_as<uint64_t>(bytes); }
};

inline ReadBuffer make_read_buffer(int64_t bytes) {
  ReadBuffer b{allocate_aligned(static_cast<size_t>(bytes)), bytes / 8};
  auto* words = reinterpret_cast<uint64_t*>(b.bytes.get());
  for (int64_t i = 0; i < b.words; ++i) words[i] = 0x0123456789abcdefULL;
  return b;
}

// Read buffers by size, made on first use, so a filtered run builds only what it reads.
class ReadBufferCache {
 public:
  const ReadBuffer& get(int64_t bytes) {
    ReadBuffer& b = buffers_[bytes];
    if (b.words == 0) b = make_read_buffer(bytes);
    return b;
  }

 private:
  std::map<int64_t, ReadBuffer> buffers_;
};

// XOR of words [begin, begin + words) of `buffer` (words a multiple of 32), split over
// `threads` OpenMP threads as the GEMVs split their rows.
inline uint64_t read_words(const ReadBuffer& buffer, int64_t begin, int64_t words, int threads) {
  constexpr int64_t kBlock = 32;  // words, the unit each thread's share is a multiple of
  const int64_t blocks = words / kBlock;
  const XorWordsFn xor_words = xor_words_for(cpu::best_cpu_isa());
  uint64_t sum = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(^ : sum)
  for (int t = 0; t < threads; ++t) {
    const int64_t b = blocks * t / threads * kBlock, e = blocks * (t + 1) / threads * kBlock;
    sum ^= xor_words(buffer.data() + begin + b, e - b);
  }
  return sum;
}

// Reads all of `buffer` each iteration, split over `threads` OpenMP threads; bytes/s counted.
inline void run_read(benchmark::State& state, const ReadBuffer& buffer, int threads) {
  set_threads(threads);
  const int64_t words = buffer.words / 32 * 32;
  uint64_t sum = 0;
  for (auto _ : state) {
    sum ^= read_words(buffer, 0, words, threads);
    benchmark::DoNotOptimize(sum);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * words * static_cast<int64_t>(sizeof(uint64_t)));
}

}  // namespace fsq::bench
