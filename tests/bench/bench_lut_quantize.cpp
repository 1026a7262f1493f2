// SqueezeLLM quantization of one LLaMA-7B down_proj-sized matrix (4096 x 11008): random
// heavy-tailed weights (Student-t, 3 degrees of freedom, scale 0.02) and random Fisher
// (Exp(1), 2% of the positions 100x), default sparse part (0.40 % outliers + 0.05 %
// sensitive). Seconds per matrix for 4- and 3-bit codes at 1 and 2 OpenMP threads, and at
// max_iterations 50 and 300 (heavy-tailed rows need 100-250 Lloyd iterations to meet the
// 1e-6 tolerance). Counters: bits per weight (lut_bits_per_weight), rows that hit the
// iteration cap, sparse values, Fisher-weighted error.
//   build/tests/bench/bench_lut_quantize
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstdint>
#include <random>
#include <vector>

#include "formats/quant/lut_quant.h"
#include "quantize/squeezellm/lut_quantizer.h"

namespace fsq::squeezellm {
namespace {

constexpr int64_t kRows = 4096;
constexpr int64_t kCols = 11008;

struct Inputs {
  std::vector<float> w, fisher;
  Inputs() : w(kRows * kCols), fisher(kRows * kCols) {
    std::mt19937_64 rng(2023);
    std::student_t_distribution<double> t(3.0);
    std::exponential_distribution<float> e(1.0f);
    for (auto& v : w) v = static_cast<float>(0.02 * t(rng));
    for (auto& v : fisher) v = e(rng);
    std::uniform_int_distribution<int64_t> pick(0, kRows * kCols - 1);
    for (int64_t i = 0; i < kRows * kCols / 50; ++i) fisher[pick(rng)] *= 100.0f;
  }
};

const Inputs& inputs() {
  static const Inputs in;
  return in;
}

void BM_QuantizeLut(benchmark::State& state) {
  const Inputs& in = inputs();
  LutOptions o;
  o.bits = static_cast<int>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  o.max_iterations = static_cast<int>(state.range(2));
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  LutStats stats;
  for (auto _ : state) {
    LutMatrix m = quantize_lut(in.w.data(), in.fisher.data(), kRows, kCols, o, &stats, "bench");
    benchmark::DoNotOptimize(m.codes.data());
  }
  omp_set_num_threads(saved);
  state.counters["bits_per_weight"] = lut_bits_per_weight(o.bits, kRows, kCols, stats.nnz);
  state.counters["rows_capped"] = static_cast<double>(stats.rows_hit_iteration_cap);
  state.counters["nnz"] = static_cast<double>(stats.nnz);
  state.counters["weighted_error"] = stats.weighted_error;
}

// Args: bits, threads, max_iterations.
BENCHMARK(BM_QuantizeLut)
    ->ArgNames({"bits", "threads", "max_it"})
    ->ArgsProduct({{4, 3}, {1, 2}, {50, 300}})
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace fsq::squeezellm

BENCHMARK_MAIN();
