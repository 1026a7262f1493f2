// W8A8 linears: cpu::int8_linear (per-token activation quantization included) against
// dense f32 at::mm (LibTorch on OpenBLAS) of the same shape, and the int8 decode GEMV
// against the read-only bandwidth kernel (read_bandwidth.h) over as many bytes. Shapes,
// K x N (in x out):
//   GEMM, M = 512 prefill rows: 4096 x 4096 (LLaMA-7B q/o_proj) and SmolLM2-135M's 576 x 576
//   (q/o_proj), 576 x 1536 (gate/up_proj), 1536 x 576 (down_proj); reported in GOPS,
//   2 M N K per second, with the int8 / f32 ratio;
//   GEMV, M = 1: 4096 x 4096 and 11008 x 4096 (LLaMA-7B down_proj), in GB/s of prepared
//   weight bytes, hot (the same weights every call: 16 MiB may sit in L3, 43 MiB does not)
//   and mem (cycling through copies totalling twice the L3, at least 256 MiB; FSQ_BENCH_MEM_MIB
//   overrides), each next to the read kernel over the same number of bytes.
// The GEMM table also times the prompt kernels of the other types at the same shapes:
// cpu::uniform_gemm_q8 on w4g64a weights (the packed W4 prefill, int8 activations) and
// cpu::f32_gemm_xwt (oneDNN's sgemm, the dense f32 prefill), each in GOPS next to at::mm.
// Every benchmark runs on 1 thread and on all hardware threads. FSQ_CPU_ISA=scalar|avx2|avx512
// picks the int8 variant (avx512 runs VNNI where the CPU has it). After the Google Benchmark
// output, two summary tables (medians with --benchmark_repetitions). Timings on a shared
// machine are noisy: compare ratios taken in one run. Run it as
//   build/tests/bench/bench_int8_kernels --benchmark_min_time=0.5
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "formats/quant/bitpack.h"
#include "formats/quant/quant_types.h"
#include "runtime/cpu/f32_gemm.h"
#include "runtime/cpu/int8_kernels.h"
#include "runtime/cpu/uniform_q8_kernels.h"
#include "runtime/aligned_bytes.h"
#include "runtime/quant_linear.h"
#include "runtime/threads.h"
#include "bench_support.h"
#include "read_bandwidth.h"

namespace fsq {
namespace {

struct Shape {
  const char* what;
  int64_t k, n;  // in, out features
};
const std::vector<Shape> kGemmShapes = {{"7b q/o_proj", 4096, 4096},
                                        {"smollm2 q/o_proj", 576, 576},
                                        {"smollm2 gate/up_proj", 576, 1536},
                                        {"smollm2 down_proj", 1536, 576}};
const std::vector<Shape> kGemvShapes = {{"7b q/o_proj", 4096, 4096}, {"7b down_proj", 11008, 4096}};
constexpr int64_t kPrefillRows = 512;

std::string shape_name(const Shape& s) { return std::to_string(s.k) + "x" + std::to_string(s.n); }
std::string gemm_key(const char* what, const Shape& s, int threads) {
  return std::string(what) + "/" + shape_name(s) + "/m" + std::to_string(kPrefillRows) + "/t" + std::to_string(threads);
}
std::string gemv_key(const char* regime, const Shape& s, int threads) {
  return std::string("int8-gemv-") + regime + "/" + shape_name(s) + "/t" + std::to_string(threads);
}
std::string read_key(int64_t bytes, int threads) {
  return "read/" + std::to_string(bytes >> 10) + "KiB/t" + std::to_string(threads);
}

double gops(const Shape& s, double us) { return us > 0 ? 2.0 * kPrefillRows * s.n * s.k * 1e-3 / us : 0.0; }
double gbps(double bytes, double us) { return us > 0 ? bytes * 1e-3 / us : 0.0; }

// Copies of one random int8 weight matrix, prepared (the values do not matter to the
// timing, the layout does), totalling at least `total` bytes.
class PreparedSet {
 public:
  PreparedSet(const Shape& s, int64_t total) : bytes_(cpu::int8_prepared_bytes(s.n, s.k)) {
    std::mt19937 rng(1);
    std::uniform_int_distribution<int> code(-127, 127);
    std::vector<int8_t> q(static_cast<size_t>(s.n * s.k));
    for (int8_t& c : q) c = static_cast<int8_t>(code(rng));
    scales_.assign(static_cast<size_t>(s.n), 0.01f);
    const cpu::Int8WeightsView w{q.data(), scales_.data(), s.n, s.k};
    do {
      buffers_.push_back(allocate_aligned(static_cast<size_t>(bytes_)));  // huge-page weight memory, as the model's
      cpu::Int8PreparedView v;
      if (cpu::int8_prepare_weights(w, buffers_.back().get(), &v) != cpu::KernelStatus::Ok) std::abort();
      views_.push_back(v);
    } while (static_cast<int64_t>(views_.size()) * bytes_ < total);
  }
  int64_t bytes() const { return bytes_; }
  const std::vector<cpu::Int8PreparedView>& views() const { return views_; }

 private:
  int64_t bytes_;
  std::vector<float> scales_;
  std::vector<AlignedBytes> buffers_;
  std::vector<cpu::Int8PreparedView> views_;
};

std::vector<float> random_x(int64_t m, int64_t k) {
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(m * k));
  for (float& v : x) v = normal(rng);
  return x;
}

// int8_linear through the set's copies round robin, m rows of x.
void run_int8(benchmark::State& state, const PreparedSet& set, const Shape& s, int64_t m, int threads) {
  set_threads(threads);
  const cpu::CpuIsa isa = cpu::selected_cpu_isa();
  const std::vector<float> x = random_x(m, s.k);
  std::vector<float> y(static_cast<size_t>(m * s.n));
  size_t next = 0;
  for (auto _ : state) {
    const cpu::KernelStatus st = cpu::int8_linear(set.views()[next], x.data(), m, s.k, cpu::ActQuant::PerToken, 0.0f,
                                                  y.data(), s.n, isa);
    if (st != cpu::KernelStatus::Ok) state.SkipWithError(cpu::kernel_status_message(st));
    benchmark::DoNotOptimize(y.data());
    next = next + 1 == set.views().size() ? 0 : next + 1;
  }
}

// y = x W^T in f32, as at::linear computes it (OpenBLAS sgemm on the transposed view).
void run_mm(benchmark::State& state, const Shape& s, int threads) {
  set_threads(threads);
  const at::Tensor x = at::randn({kPrefillRows, s.k}), w = at::randn({s.n, s.k});
  for (auto _ : state) benchmark::DoNotOptimize(at::mm(x, w.t()));
}

// A w4g64a QuantLinear of random codes, zero points and scales (the values do not matter to
// the timing, the layout does).
std::unique_ptr<QuantLinear> random_w4(const Shape& s) {
  const UniformQuant q = find_uniform_quant("w4g64a");
  std::mt19937 rng(3);
  const int64_t groups = q.group_count(s.k) * s.n;
  std::vector<uint8_t> codes(static_cast<size_t>(s.k * s.n)), zeros(static_cast<size_t>(groups));
  std::uniform_int_distribution<int> code(0, 15);
  for (uint8_t& c : codes) c = static_cast<uint8_t>(code(rng));
  for (uint8_t& z : zeros) z = static_cast<uint8_t>(code(rng));
  const std::vector<uint32_t> words = pack_rows(codes, s.n, s.k, q.bits);
  const std::vector<uint16_t> scales(static_cast<size_t>(groups), 0x2000);  // fp16 0.0078125
  const auto bytes = [](const auto& v) { return std::as_bytes(std::span(v)); };
  return std::make_unique<QuantLinear>(q, s.n, s.k, bytes(words), bytes(scales), bytes(zeros), std::nullopt, "bench");
}

// The W4 prefill GEMM on int8 activations (x quantized inside, as in a forward).
void run_w4_q8(benchmark::State& state, const Shape& s, int threads) {
  set_threads(threads);
  const std::unique_ptr<QuantLinear> w = random_w4(s);
  const std::vector<float> x = random_x(kPrefillRows, s.k);
  std::vector<float> y(static_cast<size_t>(kPrefillRows * s.n));
  for (auto _ : state) {
    const cpu::KernelStatus st =
        cpu::uniform_gemm_q8(w->weights_view(), x.data(), kPrefillRows, s.k, y.data(), s.n, cpu::selected_cpu_isa());
    if (st != cpu::KernelStatus::Ok) state.SkipWithError(cpu::kernel_status_message(st));
    benchmark::DoNotOptimize(y.data());
  }
}

// y = x W^T through oneDNN's sgemm (the dense f32 prefill).
void run_dnnl(benchmark::State& state, const Shape& s, int threads) {
  set_threads(threads);
  const std::vector<float> x = random_x(kPrefillRows, s.k), w = random_x(s.n, s.k);
  std::vector<float> y(static_cast<size_t>(kPrefillRows * s.n));
  for (auto _ : state) {
    const cpu::KernelStatus st = cpu::f32_gemm_xwt(x.data(), kPrefillRows, s.k, s.k, w.data(), s.n, s.k, y.data(), s.n);
    if (st != cpu::KernelStatus::Ok) state.SkipWithError(cpu::kernel_status_message(st));
    benchmark::DoNotOptimize(y.data());
  }
}

// Weights and buffers, built on first use: a filtered run builds only what it runs.
class Fixtures {
 public:
  const PreparedSet& hot(const Shape& s) { return get(hot_, s, 0); }
  const PreparedSet& mem(const Shape& s) { return get(mem_, s, bench::mem_bytes()); }
  const bench::ReadBuffer& read_buffer(int64_t bytes) { return read_.get(bytes); }

 private:
  // total > 0 (the "mem" sets, hundreds of MiB each): only the latest set stays.
  const PreparedSet& get(std::map<std::string, std::unique_ptr<PreparedSet>>& sets, const Shape& s, int64_t total) {
    auto it = sets.find(shape_name(s));
    if (it == sets.end()) {
      if (total > 0) sets.clear();
      it = sets.emplace(shape_name(s), std::make_unique<PreparedSet>(s, total)).first;
    }
    return *it->second;
  }
  std::map<std::string, std::unique_ptr<PreparedSet>> hot_, mem_;
  bench::ReadBufferCache read_;
};

void register_all(Fixtures& f, const std::vector<int>& thread_counts) {
  Fixtures* fx = &f;
  for (const Shape& s : kGemmShapes) {
    const Shape* sp = &s;
    for (int threads : thread_counts) {
      bench::add(gemm_key("int8-gemm", s, threads), [=](benchmark::State& st) {
        run_int8(st, fx->hot(*sp), *sp, kPrefillRows, threads);
      });
      bench::add(gemm_key("f32-mm", s, threads), [=](benchmark::State& st) { run_mm(st, *sp, threads); });
      bench::add(gemm_key("w4-q8-gemm", s, threads), [=](benchmark::State& st) { run_w4_q8(st, *sp, threads); });
      bench::add(gemm_key("f32-dnnl", s, threads), [=](benchmark::State& st) { run_dnnl(st, *sp, threads); });
    }
  }
  for (const Shape& s : kGemvShapes) {
    const Shape* sp = &s;
    const int64_t bytes = cpu::int8_prepared_bytes(s.n, s.k);
    for (int threads : thread_counts) {
      bench::add(gemv_key("hot", s, threads), [=](benchmark::State& st) { run_int8(st, fx->hot(*sp), *sp, 1, threads); });
      bench::add(read_key(bytes, threads),
                 [=](benchmark::State& st) { bench::run_read(st, fx->read_buffer(bytes), threads); });
      bench::add(gemv_key("mem", s, threads), [=](benchmark::State& st) { run_int8(st, fx->mem(*sp), *sp, 1, threads); });
    }
  }
  for (int threads : thread_counts) {
    const int64_t bytes = bench::mem_bytes();
    bench::add(read_key(bytes, threads),
               [=](benchmark::State& st) { bench::run_read(st, fx->read_buffer(bytes), threads); });
  }
}

// Which BLAS at::mm ran on: OpenBLAS's build string and threading (the f32 numbers mean
// little with the OpenMP build, whose pool fights ours, or with the reference BLAS).
std::string blas_description() {
  using GetConfig = char* (*)();
  using GetParallel = int (*)();
  const auto config = reinterpret_cast<GetConfig>(dlsym(RTLD_DEFAULT, "openblas_get_config"));
  const auto parallel = reinterpret_cast<GetParallel>(dlsym(RTLD_DEFAULT, "openblas_get_parallel"));
  if (config == nullptr) return "not OpenBLAS";
  static const char* const kThreading[] = {"sequential", "pthreads", "OpenMP"};
  const int p = parallel != nullptr ? parallel() : -1;
  return std::string(config()) + ", " + (p >= 0 && p <= 2 ? kThreading[p] : "unknown threading");
}

void print_tables(const bench::Collector& c, const std::vector<int>& thread_counts) {
  const cpu::CpuIsa isa = cpu::selected_cpu_isa();
  std::printf("\nint8 kernel %s (ISA %s); f32: at::mm (LibTorch on OpenBLAS), same threads. GOPS = 2 M N K / time, "
              "M = %ld\n",
              cpu::int8_kernel_name(cpu::int8_kernel_for(isa)), cpu::cpu_isa_name(isa), static_cast<long>(kPrefillRows));
  std::printf("BLAS: %s\n", blas_description().c_str());
  std::printf("w4q8: cpu::uniform_gemm_q8 on w4g64a; dnnl: cpu::f32_gemm_xwt (oneDNN sgemm); x: at::mm time / theirs\n");
  std::printf("%-22s %-10s %3s | %9s %9s | %9s %9s | %6s | %9s %6s | %9s %6s\n", "GEMM", "K x N", "thr", "int8_us",
              "int8_GOPS", "f32_us", "f32_GOPS", "ratio", "w4q8_GOPS", "x", "dnnl_GOPS", "x");
  for (const Shape& s : kGemmShapes)
    for (int threads : thread_counts) {
      const double i8 = c.get(gemm_key("int8-gemm", s, threads)), f32 = c.get(gemm_key("f32-mm", s, threads));
      const double w4 = c.get(gemm_key("w4-q8-gemm", s, threads)), dnnl = c.get(gemm_key("f32-dnnl", s, threads));
      if (i8 == 0 || f32 == 0 || w4 == 0 || dnnl == 0) continue;  // filtered out
      std::printf("%-22s %-10s %3d | %9.1f %9.1f | %9.1f %9.1f | %6.2f | %9.1f %6.2f | %9.1f %6.2f\n", s.what,
                  shape_name(s).c_str(), threads, i8, gops(s, i8), f32, gops(s, f32), f32 / i8, gops(s, w4), f32 / w4,
                  gops(s, dnnl), f32 / dnnl);
    }
  const int64_t mem = bench::mem_bytes();
  std::printf("\nint8 GEMV (m = 1): prepared weight GB/s vs the read-only kernel (%s loads) over as many bytes\n",
              cpu::cpu_isa_name(cpu::best_cpu_isa()));
  std::printf("hot: same weights each call; mem: cycled over %ld MiB (L3 here: %ld MiB)\n", static_cast<long>(mem >> 20),
              sysconf(_SC_LEVEL3_CACHE_SIZE) >> 20);
  std::printf("%-22s %-10s %3s | %7s %7s %5s | %7s %7s %5s\n", "GEMV", "K x N", "thr", "hot", "read", "%", "mem", "read",
              "%");
  for (const Shape& s : kGemvShapes)
    for (int threads : thread_counts) {
      const double bytes = static_cast<double>(cpu::int8_prepared_bytes(s.n, s.k));
      const double hot = gbps(bytes, c.get(gemv_key("hot", s, threads)));
      const double hot_read = gbps(bytes, c.get(read_key(static_cast<int64_t>(bytes), threads)));
      const double in_mem = gbps(bytes, c.get(gemv_key("mem", s, threads)));
      const double mem_read = gbps(static_cast<double>(mem), c.get(read_key(mem, threads)));
      if (hot == 0 && in_mem == 0) continue;  // filtered out
      std::printf("%-22s %-10s %3d | %7.1f %7.1f %5.0f | %7.1f %7.1f %5.0f\n", s.what, shape_name(s).c_str(), threads,
                  hot, hot_read, hot_read > 0 ? 100 * hot / hot_read : 0.0, in_mem, mem_read,
                  mem_read > 0 ? 100 * in_mem / mem_read : 0.0);
    }
}

}  // namespace
}  // namespace fsq

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  std::vector<int> thread_counts = {1};
  const int all = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (all > 1) thread_counts.push_back(all);
  fsq::Fixtures fixtures;
  fsq::register_all(fixtures, thread_counts);
  fsq::bench::Collector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  fsq::print_tables(collector, thread_counts);
  benchmark::Shutdown();
  return 0;
}
