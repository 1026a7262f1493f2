// Decode-time linears of SmolLM2-135M shapes: QuantLinear (W4/W8, fused dequantize + GEMV)
// against a dense f32 at::linear of the same shape, measured in the same run, plus memcpy
// as the bandwidth yardstick. Two regimes:
//   hot:      the same weights every iteration (they stay in L2 when small), compared with
//             a memcpy of the packed weight bytes;
//   streamed: cycling through copies of the weights totalling kStreamBytes, as a decode step
//             walks through a model's layers, compared with a memcpy of a large buffer.
// After the Google Benchmark output it prints one table of ratios. FSQ_CPU_ISA=scalar|avx2|
// avx512 picks the kernel variant. Timings on a shared machine are noisy: compare ratios
// taken in one run, not absolute times.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "formats/quant/bitpack.h"
#include "formats/quant/quant_types.h"
#include "runtime/linear.h"
#include "runtime/model.h"
#include "runtime/quant_linear.h"

namespace fsq {
namespace {

struct Shape {
  const char* what;
  int64_t in, out;  // K, N
};
constexpr Shape kShapes[] = {{"q/o_proj", 576, 576},
                             {"gate/up_proj", 576, 1536},
                             {"down_proj", 1536, 576},
                             {"lm_head", 576, 49152}};
// g64: the largest group size dividing 576 (SmolLM2's hidden size).
constexpr const char* kQuantTypes[] = {"w4g64a", "w8g64a"};
constexpr int64_t kBatchRows[] = {1, 8};
constexpr int64_t kStreamBytes = int64_t{64} << 20;  // well past L2, like a model's layers
constexpr int64_t kLargeCopyBytes = int64_t{256} << 20;

std::string shape_name(const Shape& s) { return std::to_string(s.in) + "x" + std::to_string(s.out); }

int64_t copies_for(int64_t bytes) { return std::max<int64_t>(1, (kStreamBytes + bytes - 1) / bytes); }

// `copies` QuantLinears of random codes, zero points and scales, packed like a checkpoint
// (the values do not matter to the timing, the layout does).
std::vector<std::unique_ptr<QuantLinear>> make_random_quant(const Shape& s, const UniformQuant& q) {
  std::mt19937 rng(1);
  const int64_t groups = q.group_count(s.in) * s.out;
  std::vector<uint8_t> codes(static_cast<size_t>(s.in * s.out)), zeros(static_cast<size_t>(groups));
  std::uniform_int_distribution<int> code(0, (1 << q.bits) - 1);
  for (uint8_t& c : codes) c = static_cast<uint8_t>(code(rng));
  for (uint8_t& z : zeros) z = static_cast<uint8_t>(code(rng));
  const std::vector<uint32_t> words = pack_rows(codes, s.out, s.in, q.bits);
  const std::vector<uint16_t> scales(static_cast<size_t>(groups), 0x2000);  // fp16 0.0078125
  const auto bytes = [](const auto& v) { return std::as_bytes(std::span(v)); };
  std::vector<std::unique_ptr<QuantLinear>> out;
  do {
    out.push_back(std::make_unique<QuantLinear>(q, s.out, s.in, bytes(words), bytes(scales),
                                                q.symmetric ? std::span<const std::byte>{} : bytes(zeros),
                                                std::nullopt, "bench"));
  } while (static_cast<int64_t>(out.size()) < copies_for(out.front()->weight_bytes()));
  return out;
}

std::vector<std::unique_ptr<DenseLinear>> make_random_dense(const Shape& s) {
  const at::Tensor w = at::randn({s.out, s.in});
  std::vector<std::unique_ptr<DenseLinear>> out;
  for (int64_t i = 0; i < copies_for(w.numel() * 4); ++i) out.push_back(std::make_unique<DenseLinear>(w.clone(), std::nullopt));
  return out;
}

int all_threads() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

// forward() through `linears`, one per iteration, round robin.
void run_linears(benchmark::State& state, const std::vector<const Linear*>& linears, int64_t m, int threads) {
  set_threads(threads);
  const at::Tensor x = at::randn({m, linears.front()->in_features()});
  size_t next = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(linears[next]->forward(x));
    next = next + 1 == linears.size() ? 0 : next + 1;
  }
  state.SetBytesProcessed(state.iterations() * linears.front()->weight_bytes());
}

// The kernel alone, without QuantLinear::forward's tensor handling.
void run_kernel(benchmark::State& state, const QuantLinear& linear, int64_t m, int threads) {
  set_threads(threads);
  const cpu::UniformWeightsView w = linear.weights_view();
  const std::vector<float> x(static_cast<size_t>(m * w.cols), 0.5f);
  std::vector<float> y(static_cast<size_t>(m * w.rows));
  for (auto _ : state) {
    if (cpu::uniform_gemv(w, x.data(), m, w.cols, y.data(), w.rows, linear.cpu_isa()) != cpu::KernelStatus::Ok)
      state.SkipWithError("uniform_gemv failed");
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * linear.weight_bytes());
}

// Copies `bytes` split over `threads` OpenMP threads.
void run_memcpy(benchmark::State& state, int64_t bytes, int threads) {
  set_threads(threads);
  std::vector<char> src(static_cast<size_t>(bytes), 1), dst(static_cast<size_t>(bytes));
  for (auto _ : state) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int t = 0; t < threads; ++t) {
      const int64_t begin = bytes * t / threads, end = bytes * (t + 1) / threads;
      std::memcpy(dst.data() + begin, src.data() + begin, static_cast<size_t>(end - begin));
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * bytes);
}

// Keeps each run's real time (microseconds) by name for the ratio table.
class Collector : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> micros;
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs)
      if (!r.error_occurred) micros[r.run_name.function_name] = r.GetAdjustedRealTime();
  }
  double get(const std::string& name) const {
    const auto it = micros.find(name);
    return it == micros.end() ? 0.0 : it->second;
  }
};

std::string key(const char* kind, const Shape& s, const std::string& type, int64_t m, int threads) {
  return std::string(kind) + "/" + shape_name(s) + "/" + type + "/m" + std::to_string(m) + "/t" +
         std::to_string(threads);
}
std::string large_copy_key(int threads) { return "memcpy/256MiB/t" + std::to_string(threads); }

template <typename Fn>
void add(const std::string& name, Fn fn) {
  benchmark::RegisterBenchmark(name.c_str(), fn)->Unit(benchmark::kMicrosecond)->UseRealTime();
}

template <typename T>
std::vector<const Linear*> pointers(const std::vector<std::unique_ptr<T>>& v, bool all) {
  std::vector<const Linear*> out;
  for (size_t i = 0; i < (all ? v.size() : 1); ++i) out.push_back(v[i].get());
  return out;
}

struct Fixtures {
  std::map<std::string, std::vector<std::unique_ptr<DenseLinear>>> dense;  // by shape name
  std::map<std::string, std::vector<std::unique_ptr<QuantLinear>>> quant;  // by "<shape>/<type>"
};

void register_all(Fixtures& f, const std::vector<int>& thread_counts) {
  for (const Shape& s : kShapes) {
    const auto& dense = f.dense[shape_name(s)] = make_random_dense(s);
    for (const char* type : kQuantTypes)
      f.quant[shape_name(s) + "/" + type] = make_random_quant(s, find_uniform_quant(type));
    for (int threads : thread_counts) {
      for (int64_t m : kBatchRows) {
        for (bool streamed : {false, true}) {
          const char* mode = streamed ? "stream-dense" : "dense";
          add(key(mode, s, "f32", m, threads),
              [=, d = pointers(dense, streamed)](benchmark::State& st) { run_linears(st, d, m, threads); });
        }
        for (const char* type : kQuantTypes) {
          const auto& quant = f.quant[shape_name(s) + "/" + type];
          for (bool streamed : {false, true})
            add(key(streamed ? "stream-quant" : "quant", s, type, m, threads),
                [=, q = pointers(quant, streamed)](benchmark::State& st) { run_linears(st, q, m, threads); });
          const QuantLinear* q = quant.front().get();
          add(key("kernel", s, type, m, threads), [=](benchmark::State& st) { run_kernel(st, *q, m, threads); });
        }
      }
      for (const char* type : kQuantTypes) {
        const int64_t bytes = f.quant[shape_name(s) + "/" + type].front()->weight_bytes();
        add(key("memcpy", s, type, 0, threads), [=](benchmark::State& st) { run_memcpy(st, bytes, threads); });
      }
    }
  }
  for (int threads : thread_counts)
    add(large_copy_key(threads), [=](benchmark::State& st) { run_memcpy(st, kLargeCopyBytes, threads); });
}

void print_ratios(const Collector& c, const Fixtures& f, const std::vector<int>& thread_counts) {
  std::printf("\nkernel ISA %s; speedup = dense f32 time / QuantLinear time; GB/s = packed weight bytes per second\n",
              cpu::cpu_isa_name(cpu::selected_cpu_isa()));
  std::printf("hot: same weights each call, memcpy of as many bytes; streamed: weights cycled over %ld MiB, "
              "memcpy of %ld MiB\n",
              static_cast<long>(kStreamBytes >> 20), static_cast<long>(kLargeCopyBytes >> 20));
  std::printf("%-21s %-6s %2s %3s | %8s %8s %8s %7s %6s %6s | %8s %8s %7s %6s %6s\n", "shape (K x N)", "type", "m",
              "thr", "dense_us", "quant_us", "kernel", "speedup", "GB/s", "memcpy", "dense_us", "quant_us", "speedup",
              "GB/s", "memcpy");
  for (const Shape& s : kShapes)
    for (const char* type : kQuantTypes)
      for (int threads : thread_counts)
        for (int64_t m : kBatchRows) {
          const double dense = c.get(key("dense", s, "f32", m, threads)), quant = c.get(key("quant", s, type, m, threads));
          const double kernel = c.get(key("kernel", s, type, m, threads));
          const double copy = c.get(key("memcpy", s, type, 0, threads));
          const double s_dense = c.get(key("stream-dense", s, "f32", m, threads));
          const double s_quant = c.get(key("stream-quant", s, type, m, threads));
          const double large_copy = c.get(large_copy_key(threads));
          if (dense == 0 || quant == 0 || kernel == 0 || copy == 0 || s_dense == 0 || s_quant == 0 || large_copy == 0)
            continue;  // filtered out
          const double mb = static_cast<double>(f.quant.at(shape_name(s) + "/" + type).front()->weight_bytes()) * 1e-3;
          std::printf("%-21s %-6s %2ld %3d | %8.1f %8.1f %8.1f %7.2f %6.1f %6.1f | %8.1f %8.1f %7.2f %6.1f %6.1f\n",
                      (std::string(s.what) + " " + shape_name(s)).c_str(), type, static_cast<long>(m), threads, dense,
                      quant, kernel, dense / quant, mb / quant, mb / copy, s_dense, s_quant, s_dense / s_quant,
                      mb / s_quant, static_cast<double>(kLargeCopyBytes) * 1e-3 / large_copy);
        }
}

}  // namespace
}  // namespace fsq

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  std::vector<int> thread_counts = {1};
  if (fsq::all_threads() > 1) thread_counts.push_back(fsq::all_threads());
  fsq::Fixtures fixtures;
  fsq::register_all(fixtures, thread_counts);
  fsq::Collector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  fsq::print_ratios(collector, fixtures, thread_counts);
  benchmark::Shutdown();
  return 0;
}
