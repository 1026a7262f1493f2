// Harness pieces shared by the kernel benchmarks (bench_uniform_kernels, bench_lut_kernels):
// how much memory the streamed runs use, registering a benchmark, collecting its times.
#pragma once

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace fsq::bench {

// Twice the L3 (at least 256 MiB), or FSQ_BENCH_MEM_MIB.
inline int64_t mem_bytes() {
  if (const char* mib = std::getenv("FSQ_BENCH_MEM_MIB")) return std::max<int64_t>(1, std::atoll(mib)) << 20;
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return std::max<int64_t>(int64_t{256} << 20, 2 * int64_t{l3 > 0 ? l3 : 0});
}

template <typename Fn>
void add(const std::string& name, Fn fn) {
  benchmark::RegisterBenchmark(name.c_str(), fn)->Unit(benchmark::kMicrosecond)->UseRealTime();
}

// Keeps each run's real time (microseconds) by name for the summary tables: the run itself,
// or the median of its repetitions.
class Collector : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> micros;
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      if (r.run_type == Run::RT_Iteration)
        micros.emplace(r.run_name.function_name, r.GetAdjustedRealTime());
      else if (r.aggregate_name == "median")
        micros[r.run_name.function_name] = r.GetAdjustedRealTime();
    }
  }
  double get(const std::string& name) const {
    const auto it = micros.find(name);
    return it == micros.end() ? 0.0 : it->second;
  }
};

}  // namespace fsq::bench
