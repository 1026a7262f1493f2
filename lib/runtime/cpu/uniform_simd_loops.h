// The loops of the SIMD uniform kernels, written once over a vector-ops struct `Simd` that
// each ISA file defines (uniform_kernels_avx2.cpp, uniform_kernels_avx512.cpp). Everything
// here has internal linkage, so each ISA file gets its own copy compiled with its own flags
// (see uniform_isa.h). Include only from those files.
//
// Simd provides: kLanes; type Vec; zero(), load(const float*), store(float*, Vec),
// store_partial(float*, Vec, int n), fmadd(a, b, c) = a * b + c, add, reduce_add(Vec);
// group_params(scales, zeros, implicit_zero, count, scale, zero, offset): the fp16 scales
// and uint8 zeros (nullptr: implicit_zero) of `count` <= kLanes groups as floats, and
// offset = -scale * zero; type Group and group<B>(scale, zero, offset): one group's code ->
// weight map; weights<B, kExact>(codes, c0, n, group): the weights of codes c0 .. c0 + n - 1
// (n <= kLanes; c0 a multiple of kLanes, so they start on a byte boundary) in lanes
// 0 .. n - 1 (other lanes finite), reading no byte past those codes, bit-equal to
// (q - z) * scale when kExact (else within an ulp); and step_weights<B>(codes, c0, group,
// Vec* w): the kStepVectors<B> vectors of one decode step, where kStepVectors<B> is the ISA's
// count (AVX-512 takes 3-bit codes two vectors, 12 bytes, at a time).
#pragma once

#include <cstdint>
#include <utility>

#include "runtime/cpu/prefetch.h"
#include "runtime/cpu/uniform_isa.h"

// The loop bodies below are lambdas; inlined, their accumulators stay in registers.
#define FSQ_ALWAYS_INLINE __attribute__((always_inline))

namespace fsq::cpu {
namespace {

// Vectors one decode step yields. 4-bit codes come as two "nibble planes": kLanes bytes
// widened to 32-bit lanes give the low nibbles (even columns) and the high nibbles (odd
// columns); the dispatcher reorders x to match (uniform_isa.h, PanelLayout).
template <int B>
constexpr int kStepVectors = B == 4 ? 2 : 1;
template <class Simd, int B>
constexpr int kSimdStepVectors = Simd::template kStepVectors<B>;

// Decode steps per unrolled round, each into its own accumulators: an FMA has ~4 cycles
// of latency on two ports, so about 8 should be in flight; with few rows of x each row
// needs several. A round never crosses a group (groups are >= 32 columns, whole steps).
template <int M, int kVectors, int kStepCodes>
constexpr int steps_per_round() {
  constexpr int wanted = ((8 + M - 1) / M + kVectors - 1) / kVectors;
  constexpr int fits = 32 / kStepCodes > 0 ? 32 / kStepCodes : 1;
  return wanted < fits ? wanted : fits;
}

// When a round still leaves fewer than 8 accumulators, consecutive groups alternate
// between two sets of them.
template <int M, int kRoundVectors>
constexpr int kGroupSets = M * kRoundVectors < 8 ? 2 : 1;

// Weights streamed from L3 or memory arrive too late for a row computed in tens of
// nanoseconds, and the hardware prefetchers do not run far enough ahead across the three
// streams (codes, scales, zeros). So each row asks for the scales and zeros of the row
// about kPrefetchBytes of codes further on, and each group for the cache lines of the same
// group in that row, into L2 (prefetcht1): spread over the row rather than one burst into
// L1 per row, which filled the line-fill buffers with misses to DRAM and stalled the loads.
// Measured with tests/bench/bench_uniform_kernels (AVX-512, m = 1, weights streamed from DRAM):
// W4 g128 at LLaMA-7B shapes went from ~60-70% to ~90% of a read-only kernel's bandwidth,
// W8 g64 from ~75% to ~100%; W4 g64 on SmolLM2's 576-column rows lost ~5-15%.
constexpr int64_t kPrefetchBytes = 16384;

// A compile-time int for a generic lambda (accumulator indices must be constants for the
// accumulators to stay in registers).
template <int N>
struct Constant {
  static constexpr int value = N;
};

// y[i, n] for n in [row0, row1). Per group, each decoded vector of codes becomes weights
// (Simd::Group: a lookup table or one FMA, shared by all M rows of x), then acc += x * w,
// x read from the panel (uniform_isa.h). The accumulators run across the whole row:
// nothing is reduced per group. kRemainder: groups end in vectors that are not whole
// decode steps (per-channel rows whose length is not a multiple of the step).
template <class Simd, int B, int M, bool kRemainder>
void gemv_rows_impl(const GemvBatch& b, int64_t row0, int64_t row1) {
  using Vec = typename Simd::Vec;
  constexpr int kLanes = Simd::kLanes, kVectors = kSimdStepVectors<Simd, B>, kStepCodes = kVectors * kLanes;
  constexpr int kRound = steps_per_round<M, kVectors, kStepCodes>(), kRoundVectors = kRound * kVectors;
  constexpr int kSets = kGroupSets<M, kRoundVectors>, kChains = kSets * kRoundVectors;
  constexpr int64_t kPanelVector = int64_t{M} * kLanes;  // floats per panel vector (all M rows)
  const UniformWeightsView& w = *b.w;
  const int64_t group_cols = w.group_cols, groups = w.cols / group_cols;
  const int64_t group_floats = (group_cols + kLanes - 1) / kLanes * kPanelVector;
  const int64_t rounds = group_cols / (kRound * kStepCodes);
  const int64_t extra_steps = group_cols / kStepCodes - rounds * kRound;
  const int64_t extra_vectors = (group_cols % kStepCodes) / kLanes;
  const int tail = static_cast<int>(group_cols % kLanes);
  const float implicit_zero = static_cast<float>(1 << (B - 1));
  alignas(64) float scale[kLanes], zero[kLanes], offset[kLanes];
  const int64_t row_bytes = w.words_per_row * 4, group_bytes = (group_cols * B) >> 3;
  const int64_t ahead_rows = (kPrefetchBytes + row_bytes - 1) / row_bytes;  // prefetch distance
  for (int64_t n = row0; n < row1; ++n) {
    const auto* row = reinterpret_cast<const uint8_t*>(w.words + n * w.words_per_row);
    const uint16_t* scales = w.scales + n * groups;
    const uint8_t* zeros = w.zeros ? w.zeros + n * groups : nullptr;
    const bool prefetch = n + ahead_rows < w.rows;
    const uint8_t* ahead = prefetch ? row + ahead_rows * row_bytes : nullptr;  // the codes to prefetch
    if (prefetch) {
      prefetch_lines(scales + ahead_rows * groups, 0, groups * 2);
      if (zeros) prefetch_lines(zeros + ahead_rows * groups, 0, groups);
    }
    Vec acc[M][kChains];
    for (int i = 0; i < M; ++i)
      for (int c = 0; c < kChains; ++c) acc[i][c] = Simd::zero();
    // Adds group g (j-th of the current block of group parameters) into accumulators
    // [set * kRoundVectors, (set + 1) * kRoundVectors).
    const auto add_group = [&](int64_t g, int j, auto set) FSQ_ALWAYS_INLINE {
      constexpr int kFirst = decltype(set)::value * kRoundVectors;
      const auto group = Simd::template group<B>(scale[j], zero[j], offset[j]);
      const uint8_t* codes = row + ((g * group_cols * B) >> 3);  // groups start on a word
      if (prefetch) prefetch_lines(ahead, g * group_bytes, (g + 1) * group_bytes);
      const float* x = b.panel + g * group_floats;
      int64_t c = 0;  // column within the group; x points at its panel vector
      const auto step = [&](auto chain) FSQ_ALWAYS_INLINE {
        Vec weight[kVectors];
        Simd::template step_weights<B>(codes, c, group, weight);
        for (int v = 0; v < kVectors; ++v)
          for (int i = 0; i < M; ++i) {
            Vec& a = acc[i][decltype(chain)::value + v];
            a = Simd::fmadd(Simd::load(x + v * kPanelVector + i * kLanes), weight[v], a);
          }
        c += kStepCodes;
        x += kVectors * kPanelVector;
      };
      const auto round = [&]<int... R>(std::integer_sequence<int, R...>) FSQ_ALWAYS_INLINE {
        (step(Constant<kFirst + R * kVectors>{}), ...);
      };
      for (int64_t r = 0; r < rounds; ++r) round(std::make_integer_sequence<int, kRound>{});
      for (int64_t s = 0; s < extra_steps; ++s) step(Constant<kFirst>{});
      if constexpr (kRemainder) {
        // Whole vectors in column order, then a partial one (the panel is zero past the
        // group's end, so it needs no mask).
        const auto vector = [&](int count) FSQ_ALWAYS_INLINE {
          const Vec weight = Simd::template weights<B, false>(codes, c, count, group);
          for (int i = 0; i < M; ++i)
            acc[i][kFirst] = Simd::fmadd(Simd::load(x + i * kLanes), weight, acc[i][kFirst]);
          c += kLanes;
          x += kPanelVector;
        };
        for (int64_t v = 0; v < extra_vectors; ++v) vector(kLanes);
        if (tail != 0) vector(tail);
      }
    };
    for (int64_t g0 = 0; g0 < groups; g0 += kLanes) {
      const int count = static_cast<int>(groups - g0 < kLanes ? groups - g0 : kLanes);
      Simd::group_params(scales + g0, zeros ? zeros + g0 : nullptr, implicit_zero, count, scale, zero, offset);
      int j = 0;
      for (; j + kSets <= count; j += kSets) {
        add_group(g0 + j, j, Constant<0>{});
        if constexpr (kSets == 2) add_group(g0 + j + 1, j + 1, Constant<1>{});
      }
      if (j < count) add_group(g0 + j, j, Constant<0>{});  // an odd group out (kSets <= 2)
    }
    for (int i = 0; i < M; ++i) {
      for (int c = 1; c < kChains; ++c) acc[i][0] = Simd::add(acc[i][0], acc[i][c]);
      b.y[i * b.y_stride + n] = Simd::reduce_add(acc[i][0]);
    }
  }
}

template <class Simd, int B, int M>
void gemv_rows_fixed(const GemvBatch& b, int64_t row0, int64_t row1) {
  if (b.w->group_cols % (kSimdStepVectors<Simd, B> * Simd::kLanes) != 0)
    gemv_rows_impl<Simd, B, M, true>(b, row0, row1);
  else
    gemv_rows_impl<Simd, B, M, false>(b, row0, row1);
}

// The instantiation for this batch's number of activation rows (1 .. kMaxGemvRows).
template <class Simd, int B>
void gemv_rows_bits(const GemvBatch& b, int64_t row0, int64_t row1) {
  static_assert(kMaxGemvRows == 8, "one instantiation per batch size below");
  constexpr GemvRowsFn by_rows[] = {gemv_rows_fixed<Simd, B, 1>, gemv_rows_fixed<Simd, B, 2>,
                                    gemv_rows_fixed<Simd, B, 3>, gemv_rows_fixed<Simd, B, 4>,
                                    gemv_rows_fixed<Simd, B, 5>, gemv_rows_fixed<Simd, B, 6>,
                                    gemv_rows_fixed<Simd, B, 7>, gemv_rows_fixed<Simd, B, 8>};
  by_rows[b.m - 1](b, row0, row1);
}

template <class Simd>
void gemv_rows_simd(const GemvBatch& b, int64_t row0, int64_t row1) {
  switch (b.w->bits) {
    case 2: return gemv_rows_bits<Simd, 2>(b, row0, row1);
    case 3: return gemv_rows_bits<Simd, 3>(b, row0, row1);
    case 4: return gemv_rows_bits<Simd, 4>(b, row0, row1);
    default: return gemv_rows_bits<Simd, 8>(b, row0, row1);
  }
}

// Weights in column order, bit-equal to the reference dequantizer (exact weights<>).
template <class Simd, int B>
void dequantize_rows_bits(const UniformWeightsView& w, int64_t row0, int64_t nrows, float* out) {
  constexpr int kLanes = Simd::kLanes;
  const int64_t group_cols = w.group_cols, groups = w.cols / group_cols;
  const int64_t full_cols = group_cols / kLanes * kLanes;
  const int tail = static_cast<int>(group_cols - full_cols);
  const float implicit_zero = static_cast<float>(1 << (B - 1));
  alignas(64) float scale[kLanes], zero[kLanes], offset[kLanes];
  for (int64_t r = row0; r < row0 + nrows; ++r) {
    const auto* row = reinterpret_cast<const uint8_t*>(w.words + r * w.words_per_row);
    float* dst = out + (r - row0) * w.cols;
    for (int64_t g0 = 0; g0 < groups; g0 += kLanes) {
      const int count = static_cast<int>(groups - g0 < kLanes ? groups - g0 : kLanes);
      Simd::group_params(w.scales + r * groups + g0, w.zeros ? w.zeros + r * groups + g0 : nullptr, implicit_zero,
                         count, scale, zero, offset);
      for (int j = 0; j < count; ++j) {
        const auto group = Simd::template group<B>(scale[j], zero[j], offset[j]);
        const int64_t k0 = (g0 + j) * group_cols;
        for (int64_t k = k0; k < k0 + full_cols; k += kLanes)
          Simd::store(dst + k, Simd::template weights<B, true>(row, k, kLanes, group));
        if (tail != 0)
          Simd::store_partial(dst + k0 + full_cols, Simd::template weights<B, true>(row, k0 + full_cols, tail, group),
                              tail);
      }
    }
  }
}

template <class Simd>
void dequantize_rows_simd(const UniformWeightsView& w, int64_t row0, int64_t nrows, float* out) {
  switch (w.bits) {
    case 2: return dequantize_rows_bits<Simd, 2>(w, row0, nrows, out);
    case 3: return dequantize_rows_bits<Simd, 3>(w, row0, nrows, out);
    case 4: return dequantize_rows_bits<Simd, 4>(w, row0, nrows, out);
    default: return dequantize_rows_bits<Simd, 8>(w, row0, nrows, out);
  }
}

}  // namespace
}  // namespace fsq::cpu

#undef FSQ_ALWAYS_INLINE
