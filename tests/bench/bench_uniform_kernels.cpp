// Decode-time linears: QuantLinear / the raw kernel cpu::uniform_gemv (W3/W4/W8, fused
// dequantize + GEMV) on SmolLM2-135M shapes (g64: 128 does not divide 576) against a dense
// f32 at::linear of the same shape (W3 too: w3g64a), and on LLaMA-7B shapes (4096x4096
// q/o_proj, 11008x4096 down_proj; w4g128a and w3g128a, kernel only), each against bandwidth
// yardsticks measured in the same run. Regimes:
//   hot:    the same weights every iteration (they stay in L2 when small), compared with a
//           memcpy of the packed weight bytes;
//   stream: cycling through copies of the weights totalling kStreamBytes (64 MiB: past L2,
//           as a decode step walks through a small model's layers; on a CPU with a large
//           L3 they may sit in it), compared with memcpy of 256 MiB and with a read-only
//           kernel over 64 MiB;
//   mem:    the kernel alone cycling through copies totalling twice the L3 size (at least
//           256 MiB; FSQ_BENCH_MEM_MIB overrides), so weights come from DRAM as in a 7B
//           model's decode step, compared with the read-only kernel over as many bytes.
// The read-only kernel ("read/...", read_bandwidth.h) XORs the buffer into independent
// accumulators with the widest vector loads the CPU has, split over the same OpenMP threads:
// the memory read bandwidth a GEMV that reads its weights once can approach (the aim: >= 70%
// of it).
// After the Google Benchmark output it prints two tables: speedups against dense f32, and
// the kernel's weight GB/s (packed codes + scales + zeros per second) with its ratio to the
// read bandwidth of the same regime. FSQ_CPU_ISA=scalar|avx2|avx512 picks the kernel variant
// (the read kernel always uses the widest). The kernel table also has rows "<type>/q8":
// cpu::uniform_gemv_q8, int8 activations (the decode fast path's default). With --benchmark_repetitions the tables use
// the medians. A third table compares dense f32 at::linear with forward_rows
// (cpu::dense_gemv, the decode fast path's dense linear). Timings on a shared machine are noisy: compare ratios taken in one run.
//   bench_uniform_kernels --benchmark_filter='4096|read/'   (the LLaMA-7B shapes only)
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>
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
#include "runtime/cpu/uniform_kernels.h"
#include "runtime/cpu/uniform_q8_kernels.h"
#include "runtime/linear.h"
#include "runtime/model.h"
#include "runtime/quant_linear.h"
#include "runtime/torch_bridge.h"
#include "runtime/threads.h"
#include "bench_support.h"
#include "read_bandwidth.h"

namespace fsq {
namespace {

struct Shape {
  const char* what;
  int64_t in, out;  // K, N
  std::vector<std::string> types;
  std::vector<int64_t> batch_rows;  // m
  bool dense;  // also dense f32, QuantLinear::forward and the hot memcpy (else the kernel only)
};
const std::vector<Shape> kShapes = {
    // g64: the largest group size dividing 576 (SmolLM2's hidden size).
    {"q/o_proj", 576, 576, {"w4g64a", "w3g64a", "w8g64a"}, {1, 8}, true},
    {"gate/up_proj", 576, 1536, {"w4g64a", "w3g64a", "w8g64a"}, {1, 8}, true},
    {"down_proj", 1536, 576, {"w4g64a", "w3g64a", "w8g64a"}, {1, 8}, true},
    {"lm_head", 576, 49152, {"w4g64a", "w8g64a"}, {1, 8}, true},
    {"7b q/o_proj", 4096, 4096, {"w4g128a", "w3g128a"}, {1, 8}, false},
    {"7b down_proj", 11008, 4096, {"w4g128a", "w3g128a"}, {1, 8}, false},
};
constexpr int64_t kStreamBytes = int64_t{64} << 20;  // past L2, like a small model's layers
constexpr int64_t kLargeCopyBytes = int64_t{256} << 20;

// The kernel table's rows per type: f32 activations (cpu::uniform_gemv), then int8
// activations (cpu::uniform_gemv_q8, labelled "<type>/q8").
const std::string kInt8Variant = "/q8";
const std::vector<std::string> kKernelVariants = {"", kInt8Variant};

// The int8-activation GEMV takes 3-, 4- and 8-bit codes (uniform_q8_kernels.h; 3-bit ones
// where the CPU has AVX-512 VNNI and VBMI, elsewhere the row says the kernel refused them);
// 2-bit rows decode on f32 activations.
bool has_int8_decode(const std::string& type) { return type.rfind("w2", 0) != 0; }

std::string shape_name(const Shape& s) { return std::to_string(s.in) + "x" + std::to_string(s.out); }
std::string mib(int64_t bytes) { return std::to_string(bytes >> 20) + "MiB"; }

int64_t copies_for(int64_t bytes, int64_t total) { return std::max<int64_t>(1, (total + bytes - 1) / bytes); }

// QuantLinears of random codes, zero points and scales, packed like a checkpoint (the
// values do not matter to the timing, the layout does): as many copies as make `total` bytes.
std::vector<std::unique_ptr<QuantLinear>> make_random_quant(const Shape& s, const UniformQuant& q, int64_t total) {
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
  } while (static_cast<int64_t>(out.size()) < copies_for(out.front()->weight_bytes(), total));
  return out;
}

std::vector<std::unique_ptr<DenseLinear>> make_random_dense(const Shape& s) {
  const at::Tensor w = at::randn({s.out, s.in});
  std::vector<std::unique_ptr<DenseLinear>> out;
  for (int64_t i = 0; i < copies_for(w.numel() * 4, kStreamBytes); ++i)
    out.push_back(std::make_unique<DenseLinear>(copy_to_weight_memory(w, at::kFloat), std::nullopt));
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

// The kernel alone, without QuantLinear::forward's tensor handling, through `linears`
// round robin: cpu::uniform_gemv, or with int8_activations cpu::uniform_gemv_q8 (the
// decode fast path's kernel; its activation quantization is part of each call).
void run_kernel(benchmark::State& state, const std::vector<const QuantLinear*>& linears, int64_t m, int threads,
                bool int8_activations) {
  set_threads(threads);
  std::vector<cpu::UniformWeightsView> views;
  for (const QuantLinear* l : linears) views.push_back(l->weights_view());
  const int64_t rows = views.front().rows, cols = views.front().cols;
  const cpu::CpuIsa isa = linears.front()->cpu_isa();
  const std::vector<float> x(static_cast<size_t>(m * cols), 0.5f);
  std::vector<float> y(static_cast<size_t>(m * rows));
  size_t next = 0;
  for (auto _ : state) {
    const cpu::KernelStatus status =
        int8_activations ? cpu::uniform_gemv_q8(views[next], x.data(), m, cols, y.data(), rows, isa)
                         : cpu::uniform_gemv(views[next], x.data(), m, cols, y.data(), rows, isa);
    if (status != cpu::KernelStatus::Ok) {
      state.SkipWithError("the kernel refused these weights");
      break;
    }
    benchmark::ClobberMemory();
    next = next + 1 == views.size() ? 0 : next + 1;
  }
  state.SetBytesProcessed(state.iterations() * linears.front()->weight_bytes());
}

// DenseLinear::forward_rows (cpu::dense_gemv, the decode fast path's dense linear) through
// `linears` round robin, on raw rows.
void run_dense_rows(benchmark::State& state, const std::vector<const DenseLinear*>& linears, int64_t m, int threads) {
  set_threads(threads);
  const int64_t rows = linears.front()->out_features(), cols = linears.front()->in_features();
  const std::vector<float> x(static_cast<size_t>(m * cols), 0.5f);
  std::vector<float> y(static_cast<size_t>(m * rows));
  size_t next = 0;
  for (auto _ : state) {
    linears[next]->forward_rows(x.data(), m, y.data());
    benchmark::ClobberMemory();
    next = next + 1 == linears.size() ? 0 : next + 1;
  }
  state.SetBytesProcessed(state.iterations() * linears.front()->weight_bytes());
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

std::string key(const char* kind, const Shape& s, const std::string& type, int64_t m, int threads) {
  return std::string(kind) + "/" + shape_name(s) + "/" + type + "/m" + std::to_string(m) + "/t" +
         std::to_string(threads);
}
std::string large_copy_key(int threads) { return "memcpy/" + mib(kLargeCopyBytes) + "/t" + std::to_string(threads); }
std::string read_key(int64_t bytes, int threads) { return "read/" + mib(bytes) + "/t" + std::to_string(threads); }

template <typename To, typename T>
std::vector<const To*> pointers(const std::vector<std::unique_ptr<T>>& v, bool all) {
  std::vector<const To*> out;
  for (size_t i = 0; i < (all ? v.size() : 1); ++i) out.push_back(v[i].get());
  return out;
}

// Buffers and weights, built on first use: a filtered run builds only what it runs.
class Fixtures {
 public:
  explicit Fixtures(int64_t mem_bytes) : mem_bytes_(mem_bytes) {}
  int64_t mem_bytes() const { return mem_bytes_; }

  const std::vector<std::unique_ptr<DenseLinear>>& dense(const Shape& s) {
    auto& d = dense_[shape_name(s)];
    if (d.empty()) d = make_random_dense(s);
    return d;
  }
  // Copies totalling kStreamBytes; every set stays (a few hundred MiB in all).
  const std::vector<std::unique_ptr<QuantLinear>>& quant(const Shape& s, const std::string& type) {
    auto& q = quant_[shape_name(s) + "/" + type];
    if (q.empty()) {
      q = make_random_quant(s, find_uniform_quant(type), kStreamBytes);
      weight_bytes_[shape_name(s) + "/" + type] = q.front()->weight_bytes();
    }
    return q;
  }
  // Copies totalling mem_bytes(); only the latest set stays (the benchmarks of one shape
  // and type are registered one after another).
  const std::vector<std::unique_ptr<QuantLinear>>& mem_quant(const Shape& s, const std::string& type) {
    const std::string k = shape_name(s) + "/" + type;
    if (k != mem_key_) {
      mem_quant_.clear();
      mem_quant_ = make_random_quant(s, find_uniform_quant(type), mem_bytes_);
      mem_key_ = k;
      weight_bytes_[k] = mem_quant_.front()->weight_bytes();
    }
    return mem_quant_;
  }
  const bench::ReadBuffer& read_buffer(int64_t bytes) { return read_.get(bytes); }
  int64_t weight_bytes(const Shape& s, const std::string& type) {
    const auto it = weight_bytes_.find(shape_name(s) + "/" + type);
    return it != weight_bytes_.end() ? it->second : quant(s, type).front()->weight_bytes();
  }

 private:
  int64_t mem_bytes_;
  std::map<std::string, std::vector<std::unique_ptr<DenseLinear>>> dense_;  // by shape name
  std::map<std::string, std::vector<std::unique_ptr<QuantLinear>>> quant_;  // by "<shape>/<type>"
  std::string mem_key_;
  std::vector<std::unique_ptr<QuantLinear>> mem_quant_;
  bench::ReadBufferCache read_;
  std::map<std::string, int64_t> weight_bytes_;  // by "<shape>/<type>", of the sets built
};

void register_all(Fixtures& f, const std::vector<int>& thread_counts) {
  Fixtures* fx = &f;
  for (int threads : thread_counts)
    for (int64_t bytes : {kStreamBytes, f.mem_bytes()})
      bench::add(read_key(bytes, threads),
          [=](benchmark::State& st) { bench::run_read(st, fx->read_buffer(bytes), threads); });
  for (const Shape& s : kShapes) {
    const Shape* sp = &s;
    if (s.dense)
      for (int threads : thread_counts)
        for (int64_t m : s.batch_rows)
          for (bool streamed : {false, true}) {
            bench::add(key(streamed ? "stream-dense" : "dense", s, "f32", m, threads), [=](benchmark::State& st) {
              run_linears(st, pointers<Linear>(fx->dense(*sp), streamed), m, threads);
            });
            bench::add(key(streamed ? "stream-dense-rows" : "dense-rows", s, "f32", m, threads),
                       [=](benchmark::State& st) {
                         run_dense_rows(st, pointers<DenseLinear>(fx->dense(*sp), streamed), m, threads);
                       });
          }
    for (const std::string& type : s.types) {
      for (int threads : thread_counts) {
        for (int64_t m : s.batch_rows) {
          if (s.dense)
            for (bool streamed : {false, true})
              bench::add(key(streamed ? "stream-quant" : "quant", s, type, m, threads), [=](benchmark::State& st) {
                run_linears(st, pointers<Linear>(fx->quant(*sp, type), streamed), m, threads);
              });
          for (const std::string& variant : kKernelVariants) {
            const bool q8 = variant == kInt8Variant;
            if (q8 && !has_int8_decode(type)) continue;
            for (bool streamed : {false, true})
              bench::add(key(streamed ? "stream-kernel" : "kernel", s, type + variant, m, threads),
                         [=](benchmark::State& st) {
                           run_kernel(st, pointers<QuantLinear>(fx->quant(*sp, type), streamed), m, threads, q8);
                         });
            bench::add(key("mem-kernel", s, type + variant, m, threads), [=](benchmark::State& st) {
              run_kernel(st, pointers<QuantLinear>(fx->mem_quant(*sp, type), true), m, threads, q8);
            });
          }
        }
        if (s.dense)
          bench::add(key("memcpy", s, type, 0, threads), [=](benchmark::State& st) {
            run_memcpy(st, fx->weight_bytes(*sp, type), threads);
          });
      }
    }
  }
  for (int threads : thread_counts)
    bench::add(large_copy_key(threads), [=](benchmark::State& st) { run_memcpy(st, kLargeCopyBytes, threads); });
}

// Dense f32: at::linear (BLAS) against forward_rows (cpu::dense_gemv), weight GB/s, and the
// streamed kernel's share of the read-only kernel's GB/s.
void print_dense(const bench::Collector& c, const std::vector<int>& thread_counts) {
  std::printf("\ndense f32 (ISA %s): at::linear vs DenseLinear::forward_rows (cpu::dense_gemv); weight GB/s\n",
              cpu::cpu_isa_name(cpu::selected_cpu_isa()));
  std::printf("%-25s %2s %3s | %8s %8s %7s | %8s %8s %7s %7s %5s\n", "shape (K x N)", "m", "thr", "linear",
              "rows", "speedup", "s-linear", "s-rows", "speedup", "read", "%");
  for (const Shape& s : kShapes)
    for (int threads : thread_counts)
      for (int64_t m : s.batch_rows) {
        const double hot = c.get(key("dense", s, "f32", m, threads)), rows = c.get(key("dense-rows", s, "f32", m, threads));
        const double s_hot = c.get(key("stream-dense", s, "f32", m, threads));
        const double s_rows = c.get(key("stream-dense-rows", s, "f32", m, threads));
        const double read = c.get(read_key(kStreamBytes, threads));
        if (hot == 0 || rows == 0 || s_hot == 0 || s_rows == 0 || read == 0) continue;
        const double mb = static_cast<double>(s.in * s.out * 4) * 1e-3;
        const double read_gbps = static_cast<double>(kStreamBytes) * 1e-3 / read;
        std::printf("%-25s %2ld %3d | %8.1f %8.1f %7.2f | %8.1f %8.1f %7.2f %7.1f %5.0f\n",
                    (std::string(s.what) + " " + shape_name(s)).c_str(), static_cast<long>(m), threads, mb / hot,
                    mb / rows, hot / rows, mb / s_hot, mb / s_rows, s_hot / s_rows, read_gbps,
                    100 * (mb / s_rows) / read_gbps);
      }
}

void print_ratios(const bench::Collector& c, Fixtures& f, const std::vector<int>& thread_counts) {
  print_dense(c, thread_counts);
  const cpu::CpuIsa isa = cpu::selected_cpu_isa();
  std::printf("\nkernel ISA %s; speedup = dense f32 time / QuantLinear time; GB/s = packed weight bytes per second\n",
              cpu::cpu_isa_name(isa));
  std::printf("hot: same weights each call, memcpy of as many bytes; streamed: weights cycled over %ld MiB, "
              "memcpy of %ld MiB\n",
              static_cast<long>(kStreamBytes >> 20), static_cast<long>(kLargeCopyBytes >> 20));
  std::printf("%-25s %-7s %2s %3s | %8s %8s %8s %7s %6s %6s | %8s %8s %7s %6s %6s\n", "shape (K x N)", "type", "m",
              "thr", "dense_us", "quant_us", "kernel", "speedup", "GB/s", "memcpy", "dense_us", "quant_us", "speedup",
              "GB/s", "memcpy");
  for (const Shape& s : kShapes)
    for (const std::string& type : s.types)
      for (int threads : thread_counts)
        for (int64_t m : s.batch_rows) {
          const double dense = c.get(key("dense", s, "f32", m, threads));
          const double quant = c.get(key("quant", s, type, m, threads));
          const double kernel = c.get(key("kernel", s, type, m, threads));  // f32 activations
          const double copy = c.get(key("memcpy", s, type, 0, threads));
          const double s_dense = c.get(key("stream-dense", s, "f32", m, threads));
          const double s_quant = c.get(key("stream-quant", s, type, m, threads));
          const double large_copy = c.get(large_copy_key(threads));
          if (dense == 0 || quant == 0 || kernel == 0 || copy == 0 || s_dense == 0 || s_quant == 0 || large_copy == 0)
            continue;  // filtered out, or no dense comparison for this shape
          const double mb = static_cast<double>(f.weight_bytes(s, type)) * 1e-3;
          std::printf("%-25s %-7s %2ld %3d | %8.1f %8.1f %8.1f %7.2f %6.1f %6.1f | %8.1f %8.1f %7.2f %6.1f %6.1f\n",
                      (std::string(s.what) + " " + shape_name(s)).c_str(), type.c_str(), static_cast<long>(m), threads,
                      dense, quant, kernel, dense / quant, mb / quant, mb / copy, s_dense, s_quant, s_dense / s_quant,
                      mb / s_quant, static_cast<double>(kLargeCopyBytes) * 1e-3 / large_copy);
        }

  std::printf("\nkernel alone (cpu::uniform_gemv, ISA %s): weight GB/s, and %% of the read-only kernel's GB/s (%s "
              "loads, same threads)\n",
              cpu::cpu_isa_name(isa), cpu::cpu_isa_name(cpu::best_cpu_isa()));
  std::printf("hot: same weights; stream: cycled over %ld MiB (L3 here: %ld MiB); mem: cycled over %ld MiB\n",
              static_cast<long>(kStreamBytes >> 20), sysconf(_SC_LEVEL3_CACHE_SIZE) >> 20,
              static_cast<long>(f.mem_bytes() >> 20));
  std::printf("%-25s %-10s %2s %3s | %7s | %7s %7s %5s | %7s %7s %5s\n", "shape (K x N)", "type", "m", "thr", "hot",
              "stream", "read", "%", "mem", "read", "%");
  const auto gbps = [](double bytes, double us) { return us > 0 ? bytes * 1e-3 / us : 0.0; };
  const auto cell = [](double v, const char* format) {
    char buf[16];
    if (v > 0)
      std::snprintf(buf, sizeof buf, format, v);
    else
      std::snprintf(buf, sizeof buf, "-");
    return std::string(buf);
  };
  for (const Shape& s : kShapes)
    for (const std::string& type : s.types)
      for (int threads : thread_counts)
        for (int64_t m : s.batch_rows)
          for (const std::string& variant : kKernelVariants) {
          const double hot = c.get(key("kernel", s, type + variant, m, threads));
          const double stream = c.get(key("stream-kernel", s, type + variant, m, threads));
          const double mem = c.get(key("mem-kernel", s, type + variant, m, threads));
          if (hot == 0 && stream == 0 && mem == 0) continue;  // filtered out
          const double bytes = static_cast<double>(f.weight_bytes(s, type));
          const double read_stream = gbps(static_cast<double>(kStreamBytes), c.get(read_key(kStreamBytes, threads)));
          const double read_mem = gbps(static_cast<double>(f.mem_bytes()), c.get(read_key(f.mem_bytes(), threads)));
          const double k_stream = gbps(bytes, stream), k_mem = gbps(bytes, mem);
          std::printf("%-25s %-10s %2ld %3d | %7s | %7s %7s %5s | %7s %7s %5s\n",
                      (std::string(s.what) + " " + shape_name(s)).c_str(), (type + variant).c_str(),
                      static_cast<long>(m), threads,
                      cell(gbps(bytes, hot), "%.1f").c_str(), cell(k_stream, "%.1f").c_str(),
                      cell(read_stream, "%.1f").c_str(),
                      cell(read_stream > 0 ? 100 * k_stream / read_stream : 0, "%.0f").c_str(),
                      cell(k_mem, "%.1f").c_str(), cell(read_mem, "%.1f").c_str(),
                      cell(read_mem > 0 ? 100 * k_mem / read_mem : 0, "%.0f").c_str());
          }
}

}  // namespace
}  // namespace fsq

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  std::vector<int> thread_counts = {1};
  if (fsq::all_threads() > 1) thread_counts.push_back(fsq::all_threads());
  fsq::Fixtures fixtures(fsq::bench::mem_bytes());
  fsq::register_all(fixtures, thread_counts);
  fsq::bench::Collector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  fsq::print_ratios(collector, fixtures, thread_counts);
  benchmark::Shutdown();
  return 0;
}
