// The fast decode path's attention (runtime/cpu/decode_attention.h) for one KV head at
// SmolLM2's shape (3 query heads, head_dim 64) and LLaMA-7B's (1 query head per KV head,
// head_dim 128) over 64 to 2048 cached keys: microseconds per call on every ISA this CPU has,
// the speedup over the scalar loop measured in the same run, and the K/V bytes read per
// second. Run: build/tests/bench/bench_decode_attention [--benchmark_min_time=0.2]
#include <benchmark/benchmark.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench_support.h"
#include "runtime/cpu/decode_attention.h"

namespace fsq {
namespace {

using cpu::CpuIsa;

struct Shape {
  const char* name;
  int64_t heads, head_dim, keys;
};

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> all = {{"smollm2", 3, 64, 64},  {"smollm2", 3, 64, 512},
                                         {"smollm2", 3, 64, 2048}, {"7b", 1, 128, 512},
                                         {"7b", 1, 128, 2048}};
  return all;
}

std::string shape_label(const Shape& s) {
  return std::string(s.name) + " h" + std::to_string(s.heads) + " d" + std::to_string(s.head_dim) + " S" +
         std::to_string(s.keys);
}

std::string run_name(const Shape& s, CpuIsa isa) {
  return std::string(s.name) + "/h" + std::to_string(s.heads) + "/d" + std::to_string(s.head_dim) + "/S" +
         std::to_string(s.keys) + "/" + cpu::cpu_isa_name(isa);
}

void run_attention(benchmark::State& state, const Shape& s, CpuIsa isa) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const auto fill = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = normal(rng);
    return v;
  };
  const std::vector<float> q = fill(s.heads * s.head_dim), keys = fill(s.keys * s.head_dim),
                           values = fill(s.keys * s.head_dim);
  std::vector<float> scores(static_cast<size_t>(s.heads * s.keys)), out(static_cast<size_t>(s.heads * s.head_dim));
  cpu::DecodeAttentionArgs a{q.data(), s.heads, keys.data(), values.data(), s.keys, s.head_dim,
                             0.125f,   scores.data(), out.data()};
  for (auto _ : state) {
    if (cpu::decode_attention(a, isa) != cpu::KernelStatus::Ok) state.SkipWithError("decode_attention failed");
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * s.keys * s.head_dim * static_cast<int64_t>(sizeof(float)));
}

}  // namespace
}  // namespace fsq

int main(int argc, char** argv) {
  using namespace fsq;
  benchmark::Initialize(&argc, argv);
  std::vector<CpuIsa> isas;
  for (CpuIsa isa : {CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx512})
    if (cpu::cpu_supports(isa)) isas.push_back(isa);
  for (const Shape& s : shapes())
    for (CpuIsa isa : isas)
      bench::add(run_name(s, isa), [s, isa](benchmark::State& st) { run_attention(st, s, isa); });
  bench::Collector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  std::printf("\ndecode attention, one KV head, 1 thread: us per call (speedup over scalar, K/V GB/s)\n");
  for (const Shape& s : shapes()) {
    const double scalar = collector.get(run_name(s, CpuIsa::Scalar));
    std::printf("%-26s", shape_label(s).c_str());
    for (CpuIsa isa : isas) {
      const double us = collector.get(run_name(s, isa));
      if (us <= 0) {
        std::printf(" | %-7s       -", cpu::cpu_isa_name(isa));
        continue;
      }
      const double gbs = 2.0 * s.keys * s.head_dim * sizeof(float) / (us * 1e3);
      std::printf(" | %-7s %7.2f us (%4.1fx, %5.1f GB/s)", cpu::cpu_isa_name(isa), us, scalar > 0 ? scalar / us : 0.0, gbs);
    }
    std::printf("\n");
  }
  benchmark::Shutdown();
  return 0;
}
