// Decode-time LUT (SqueezeLLM) linears: the raw kernels cpu::lut_gemv (lut4, lut3) and
// cpu::lut_gemv_q8 (lut4q8, lut3q8: int8 activations and centroids, AVX-512 VNNI; lut3q8bp
// reads the 3-bit codes from their bit planes, lut3q8 from the packed words) at m = 1 on
// LLaMA-7B shapes (4096x4096 q/o_proj, 11008x4096 down_proj; K x N), dense-only and
// with 0.45 % CSR nonzeros (16-bit columns), against the read-only bandwidth kernel
// (read_bandwidth.h) over as many bytes in the same run. Each benchmark cycles through
// copies of the weights totalling twice the L3 size (at least 256 MiB; FSQ_BENCH_MEM_MIB
// overrides), so they come from DRAM as in a 7B model's decode step. Bytes counted: packed
// codes + fp16 tables (q8: the int8 tables and row scales) + the CSR part (row
// pointers, columns, values).
// After the Google Benchmark output it prints one table: the kernel's GB/s, its % of the
// read kernel's GB/s with the same threads, and what the CSR part costs (time with it over
// time without, minus 1); and both measured in pairs, which a noisy machine's drifts move
// less: each iteration of a -read-paired benchmark times the dense GEMV and the read kernel
// over as many bytes back to back ("paired" after %read: the median of read time / GEMV
// time), each of a +csr-paired one the dense and the CSR GEMV ("paired" after CSR cost: the
// median ratio, minus 1). FSQ_CPU_ISA=
// scalar|avx2|avx512 picks the kernel variant (the read kernel always uses the widest);
// FSQ_LUT_VBMI=0 keeps the AVX-512 kernel off VBMI's 3-bit unpacking (to compare). With
// --benchmark_repetitions the table uses medians.
//   build/tests/bench/bench_lut_kernels --benchmark_min_time=0.5
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench_support.h"
#include "common/half.h"
#include "formats/quant/bitpack.h"
#include "read_bandwidth.h"
#include "runtime/aligned_bytes.h"
#include "runtime/cpu/lut_kernels.h"
#include "runtime/cpu/lut_q8_kernels.h"
#include "runtime/cpu/lut_q8_slice_copy.h"
#include "runtime/threads.h"

namespace fsq {
namespace {

struct Shape {
  const char* what;
  int64_t in, out;  // K, N
};
const Shape kShapes[] = {{"7b q/o_proj", 4096, 4096}, {"7b down_proj", 11008, 4096}};
// The GEMVs timed: float activations (lut_gemv) at 4 and 3 bits, and int8 activations
// (lut_gemv_q8; 3-bit needs VBMI).
// lut3q8bp: the 3-bit codes from their bit planes (LutQ8Tables::codes3), lut3q8 from the
// packed words.
struct Kind {
  int bits;
  bool q8, planes = false;
  std::string name() const { return "lut" + std::to_string(bits) + (q8 ? "q8" : "") + (planes ? "bp" : ""); }
};
const Kind kKinds[] = {{4, false}, {4, true}, {3, false}, {3, true}, {3, true, true}};
constexpr double kSparseDensity = 0.0045;  // SqueezeLLM's 0.45 %

// One LUT matrix's arrays (random codes, tables and nonzeros: the values do not matter to
// the timing, the layout does), each in 64-byte aligned storage as LutLinear holds them: a
// 64-byte code load that straddles two cache lines costs LUT-4 half its rate.
struct LutArrays {
  int64_t rows = 0, cols = 0;
  int bits = 4;
  AlignedBytes words, lut, row_ptr, col, val;  // row_ptr null: dense-only
  int64_t nnz = 0, total_bytes = 0;

  int64_t bytes() const { return total_bytes; }
  cpu::LutWeightsView view() const {
    cpu::LutWeightsView v;
    v.words = aligned_as<uint32_t>(words);
    v.rows = rows;
    v.cols = cols;
    v.words_per_row = packed_words_per_row(bits, cols);
    v.bits = bits;
    v.lut = aligned_as<uint16_t>(lut);
    if (row_ptr) {
      v.row_ptr = aligned_as<int32_t>(row_ptr);
      v.col = col.get();
      v.col_type = cpu::LutColType::U16;
      v.val = aligned_as<uint16_t>(val);
      v.nnz = nnz;
    }
    return v;
  }
};

template <typename T>
AlignedBytes aligned_copy(const std::vector<T>& v, int64_t& total) {
  total += static_cast<int64_t>(v.size() * sizeof(T));
  return copy_aligned(std::as_bytes(std::span(v)));
}

LutArrays make_random(const Shape& s, int bits, bool sparse) {
  std::mt19937 rng(1);
  std::vector<uint8_t> codes(static_cast<size_t>(s.in * s.out));
  std::uniform_int_distribution<int> code(0, (1 << bits) - 1);
  for (uint8_t& c : codes) c = static_cast<uint8_t>(code(rng));
  std::vector<uint16_t> lut, col, val;
  std::vector<int32_t> row_ptr;
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (int64_t j = 0; j < s.out << bits; ++j) lut.push_back(f32_to_f16(normal(rng)));
  if (sparse) {
    std::bernoulli_distribution pick(kSparseDensity);
    row_ptr.push_back(0);
    for (int64_t r = 0; r < s.out; ++r) {
      for (int64_t c = 0; c < s.in; ++c)
        if (pick(rng)) {
          col.push_back(static_cast<uint16_t>(c));
          val.push_back(f32_to_f16(normal(rng)));
        }
      row_ptr.push_back(static_cast<int32_t>(val.size()));
    }
  }
  LutArrays a;
  a.rows = s.out;
  a.cols = s.in;
  a.bits = bits;
  a.words = aligned_copy(pack_rows(codes, s.out, s.in, bits), a.total_bytes);
  a.lut = aligned_copy(lut, a.total_bytes);
  if (sparse) {
    a.row_ptr = aligned_copy(row_ptr, a.total_bytes);
    a.col = aligned_copy(col, a.total_bytes);
    a.val = aligned_copy(val, a.total_bytes);
    a.nnz = static_cast<int64_t>(val.size());
  }
  return a;
}

LutArrays copy_of(const LutArrays& a) {
  LutArrays c;
  c.rows = a.rows;
  c.cols = a.cols;
  c.bits = a.bits;
  c.nnz = a.nnz;
  c.total_bytes = a.total_bytes;
  const cpu::LutWeightsView v = a.view();
  const auto copy = [](const void* p, int64_t n) {
    return p == nullptr ? AlignedBytes{} : copy_aligned({static_cast<const std::byte*>(p), static_cast<size_t>(n)});
  };
  c.words = copy(v.words, a.rows * v.words_per_row * 4);
  c.lut = copy(v.lut, (a.rows << a.bits) * 2);
  c.row_ptr = copy(v.row_ptr, (a.rows + 1) * 4);
  c.col = copy(v.col, a.nnz * 2);
  c.val = copy(v.val, a.nnz * 2);
  return c;
}

// The part of a benchmark's name after its type: "/KxN/m1/tT".
std::string shape_key(const Shape& s, int threads) {
  std::string k = "/";
  k += std::to_string(s.in) + "x" + std::to_string(s.out) + "/m1/t" + std::to_string(threads);
  return k;
}
std::string key(const Shape& s, int bits, bool sparse, int threads) {
  return "lut" + std::to_string(bits) + (sparse ? "+csr" : "") + shape_key(s, threads);
}
std::string key(const Shape& s, const Kind& kind, bool sparse, int threads) {
  return kind.name() + (sparse ? "+csr" : "") + shape_key(s, threads);
}
std::string paired_key(const Shape& s, const Kind& kind, int threads) {
  return kind.name() + "+csr-paired" + shape_key(s, threads);
}
std::string read_paired_key(const Shape& s, const Kind& kind, int threads) {
  return kind.name() + "-read-paired" + shape_key(s, threads);
}
std::string read_key(int64_t bytes, int threads) {
  return "read/" + std::to_string(bytes >> 20) + "MiB/t" + std::to_string(threads);
}

// Copies totalling mem_bytes() per set; only the latest set stays in each slot (the
// benchmarks of one shape, bits and sparsity are registered one after another): one slot for
// the single GEMVs, two for the paired dense and CSR ones.
class Fixtures {
 public:
  explicit Fixtures(int64_t mem) : mem_(mem) {}
  int64_t mem() const { return mem_; }
  const std::vector<LutArrays>& copies(const Shape& s, int bits, bool sparse) { return fill(single_, s, bits, sparse); }
  // The same matrix (make_random draws the codes and tables before the nonzeros) without
  // and with its CSR part.
  std::pair<const std::vector<LutArrays>*, const std::vector<LutArrays>*> pair(const Shape& s, int bits) {
    return {&fill(pair_dense_, s, bits, false), &fill(pair_sparse_, s, bits, true)};
  }
  const bench::ReadBuffer& read_buffer() {
    if (read_.words == 0) read_ = bench::make_read_buffer(mem_);
    return read_;
  }
  int64_t bytes(const Shape& s, int bits, bool sparse) const { return lookup(bytes_, key(s, bits, sparse, 0)); }
  int64_t nnz(const Shape& s, int bits, bool sparse) const { return lookup(nnz_, key(s, bits, sparse, 0)); }

 private:
  struct Slot {
    std::string key;
    std::vector<LutArrays> copies;
  };
  const std::vector<LutArrays>& fill(Slot& slot, const Shape& s, int bits, bool sparse) {
    const std::string k = key(s, bits, sparse, 0);
    if (k != slot.key) {
      slot.copies.clear();
      slot.copies.push_back(make_random(s, bits, sparse));
      const int64_t n = std::max<int64_t>(1, (mem_ + slot.copies[0].bytes() - 1) / slot.copies[0].bytes());
      while (static_cast<int64_t>(slot.copies.size()) < n) slot.copies.push_back(copy_of(slot.copies[0]));
      slot.key = k;
      bytes_[k] = slot.copies[0].bytes();
      nnz_[k] = slot.copies[0].nnz;
    }
    return slot.copies;
  }
  static int64_t lookup(const std::map<std::string, int64_t>& m, const std::string& k) {
    const auto it = m.find(k);
    return it == m.end() ? 0 : it->second;
  }
  int64_t mem_;
  Slot single_, pair_dense_, pair_sparse_;
  bench::ReadBuffer read_;
  std::map<std::string, int64_t> bytes_, nnz_;
};

// Bytes a GEMV reads: the int8 one reads 16 table bytes and a float scale per row instead of
// the 2^bits fp16 centroids (and 3-bit codes from their bit planes, as many bytes as packed
// at these shapes' whole chunks of 128 columns). (At these shapes' 18-50 nonzeros per row
// lut_gemv_q8 reads the CSR part row by row or as slices; the slices' copy, about 1.13x the
// CSR bytes, is not counted.)
int64_t bytes_read(int64_t lut_bytes, int64_t rows, const Kind& kind) {
  return kind.q8 ? lut_bytes - rows * (int64_t{2} << kind.bits) + rows * 20 : lut_bytes;
}

// A set of copies as the GEMV takes them, with what LutLinear prepares per matrix (the int8
// tables, the nonzeros' rows, the 3-bit bit planes); call(i) multiplies copy i by x.
class PreparedCopies {
 public:
  PreparedCopies(const std::vector<LutArrays>& copies, const Kind& kind) : kind_(kind) {
    for (const LutArrays& a : copies) {
      views_.push_back(a.view());
      if (cpu::check_lut_sparse(views_.back()) != cpu::KernelStatus::Ok) {
        error_ = "check_lut_sparse failed";
        return;
      }
      if (kind.q8) {
        tables_.emplace_back(static_cast<size_t>(a.rows * 16));
        scales_.emplace_back(static_cast<size_t>(a.rows));
        cpu::prepare_lut_q8_tables(views_.back(), tables_.back().data(), scales_.back().data());
        const bool stream = cpu::lut_q8_sparse_rows_apply(views_.back());
        sparse_rows_.emplace_back(stream ? static_cast<size_t>(a.nnz) : 0);
        if (stream) cpu::prepare_lut_q8_sparse_rows(views_.back(), sparse_rows_.back().data());
        slices_.emplace_back(views_.back());  // as LutLinear prepares them
        if (kind.planes) {
          codes3_.push_back(allocate_aligned(static_cast<size_t>(cpu::lut_q8_codes3_bytes(views_.back()))));
          cpu::prepare_lut_q8_codes3(views_.back(), reinterpret_cast<uint8_t*>(codes3_.back().get()));
        }
      }
    }
    if (kind.q8 && !cpu::lut_q8_supported(views_.front(), isa_))
      error_ = "lut_gemv_q8 needs AVX-512 VNNI (and VBMI for 3-bit codes)";
    x_.assign(static_cast<size_t>(views_.front().cols), 0.5f);
    y_.resize(static_cast<size_t>(views_.front().rows));
  }
  const char* error() const { return error_; }
  size_t size() const { return views_.size(); }
  cpu::KernelStatus call(size_t i) {
    const cpu::LutWeightsView& v = views_[i];
    if (!kind_.q8) return cpu::lut_gemv(v, x_.data(), 1, v.cols, y_.data(), v.rows, isa_);
    const cpu::LutQ8Tables t{tables_[i].data(), scales_[i].data(),
                             sparse_rows_[i].empty() ? nullptr : sparse_rows_[i].data(),
                             codes3_.empty() ? nullptr : aligned_as<uint8_t>(codes3_[i]), slices_[i].view()};
    return cpu::lut_gemv_q8(v, t, x_.data(), 1, v.cols, y_.data(), v.rows, isa_);
  }

 private:
  Kind kind_;
  cpu::CpuIsa isa_ = cpu::selected_cpu_isa();
  const char* error_ = nullptr;
  std::vector<cpu::LutQ8SliceCopy> slices_;
  std::vector<cpu::LutWeightsView> views_;
  std::vector<std::vector<uint8_t>> tables_;
  std::vector<std::vector<float>> scales_;
  std::vector<std::vector<uint16_t>> sparse_rows_;
  std::vector<AlignedBytes> codes3_;
  std::vector<float> x_, y_;
};

void run_gemv(benchmark::State& state, const std::vector<LutArrays>& copies, const Kind& kind, int threads) {
  set_threads(threads);
  PreparedCopies gemv(copies, kind);
  if (gemv.error() != nullptr) {
    state.SkipWithError(gemv.error());
    return;
  }
  size_t next = 0;
  for (auto _ : state) {
    if (gemv.call(next) != cpu::KernelStatus::Ok) state.SkipWithError("the GEMV failed");
    benchmark::ClobberMemory();
    next = next + 1 == gemv.size() ? 0 : next + 1;
  }
  state.SetBytesProcessed(state.iterations() * bytes_read(copies.front().bytes(), copies.front().rows, kind));
}

// Two calls timed back to back each iteration (which goes first alternates), so a noisy
// machine's drifts, slower than two calls, fall out of each pair's ratio: the table prints
// medians of them. The benchmark's own time is the pair's. call_a and call_b take the
// iteration's index and return false on failure.
std::map<std::string, std::vector<double>> g_pair_ratios;  // time of b / time of a, by name

template <typename CallA, typename CallB>
void time_pairs(benchmark::State& state, const std::string& name, const CallA& call_a, const CallB& call_b) {
  using Clock = std::chrono::steady_clock;
  const auto timed = [](const auto& call, size_t i) {
    const auto t0 = Clock::now();
    const bool ok = call(i);
    benchmark::ClobberMemory();
    return ok ? std::chrono::duration<double>(Clock::now() - t0).count() : -1.0;
  };
  std::vector<double>& ratios = g_pair_ratios[name];
  size_t i = 0;
  for (auto _ : state) {
    double ta, tb;
    if (i % 2 == 0) {
      ta = timed(call_a, i);
      tb = timed(call_b, i);
    } else {
      tb = timed(call_b, i);
      ta = timed(call_a, i);
    }
    if (ta <= 0 || tb <= 0) {
      state.SkipWithError("the GEMV failed");
      break;
    }
    ratios.push_back(tb / ta);
    ++i;
  }
}

// The CSR part's cost in pairs: the dense-only GEMV and the one with the CSR part, each on
// its next copy ("paired": median ratio - 1).
void run_csr_paired(benchmark::State& state, const std::vector<LutArrays>& dense, const std::vector<LutArrays>& sparse,
                    const Kind& kind, int threads, const std::string& name) {
  set_threads(threads);
  PreparedCopies d(dense, kind), s(sparse, kind);
  if (d.error() != nullptr || s.error() != nullptr) {
    state.SkipWithError(d.error() != nullptr ? d.error() : s.error());
    return;
  }
  time_pairs(
      state, name, [&](size_t i) { return d.call(i % d.size()) == cpu::KernelStatus::Ok; },
      [&](size_t i) { return s.call(i % s.size()) == cpu::KernelStatus::Ok; });
}

// The dense GEMV's share of read bandwidth in pairs: the GEMV on its next copy and the read
// kernel over as many bytes as the GEMV reads, at the next such window of the read buffer
// (both from DRAM). The median of read time / GEMV time is the GEMV's rate as a share of the
// read kernel's ("paired %read").
void run_read_paired(benchmark::State& state, const std::vector<LutArrays>& copies, const bench::ReadBuffer& buffer,
                     const Kind& kind, int threads, const std::string& name) {
  set_threads(threads);
  PreparedCopies g(copies, kind);
  if (g.error() != nullptr) {
    state.SkipWithError(g.error());
    return;
  }
  const int64_t gemv_words = bytes_read(copies.front().bytes(), copies.front().rows, kind) / 8;
  const int64_t words = std::max<int64_t>(32, gemv_words / 32 * 32);
  if (words > buffer.words) {
    state.SkipWithError("the read buffer is smaller than one matrix: raise FSQ_BENCH_MEM_MIB");
    return;
  }
  const int64_t windows = buffer.words / words;
  uint64_t sum = 0;
  time_pairs(
      state, name, [&](size_t i) { return g.call(i % g.size()) == cpu::KernelStatus::Ok; },
      [&](size_t i) {
        sum ^= bench::read_words(buffer, static_cast<int64_t>(i) % windows * words, words, threads);
        benchmark::DoNotOptimize(sum);
        return true;
      });
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

void register_all(Fixtures& f, const std::vector<int>& thread_counts) {
  Fixtures* fx = &f;
  for (int threads : thread_counts)
    bench::add(read_key(f.mem(), threads),
               [=](benchmark::State& st) { bench::run_read(st, fx->read_buffer(), threads); });
  for (const Shape& s : kShapes)
    for (const Kind& kind : kKinds)
      for (bool sparse : {false, true})
        for (int threads : thread_counts) {
          const Shape* sp = &s;
          bench::add(key(s, kind, sparse, threads),
                     [=](benchmark::State& st) { run_gemv(st, fx->copies(*sp, kind.bits, sparse), kind, threads); });
        }
  for (const Shape& s : kShapes)
    for (const Kind& kind : kKinds)
      for (int threads : thread_counts) {
        const Shape* sp = &s;
        const std::string name = paired_key(s, kind, threads);
        bench::add(name, [=](benchmark::State& st) {
          const auto [dense, sparse] = fx->pair(*sp, kind.bits);
          run_csr_paired(st, *dense, *sparse, kind, threads, name);
        });
        const std::string read_name = read_paired_key(s, kind, threads);
        bench::add(read_name, [=](benchmark::State& st) {
          run_read_paired(st, fx->copies(*sp, kind.bits, false), fx->read_buffer(), kind, threads, read_name);
        });
      }
}

void print_table(const bench::Collector& c, const Fixtures& f, const std::vector<int>& thread_counts) {
  std::printf("\ncpu::lut_gemv m=1, ISA %s%s, weights cycled over %ld MiB; read: the read-only kernel (%s loads) over "
              "%ld MiB, same threads\n",
              cpu::cpu_isa_name(cpu::selected_cpu_isa()), cpu::lut_vbmi_in_use() ? " (VBMI for 3-bit)" : "",
              static_cast<long>(f.mem() >> 20),
              cpu::cpu_isa_name(cpu::best_cpu_isa()), static_cast<long>(f.mem() >> 20));
  std::printf("%-26s %-9s %3s | %8s %8s %7s %7s %6s %7s | %9s %9s\n", "shape (K x N)", "type", "thr", "nnz", "MB",
              "us", "GB/s", "%read", "paired", "CSR cost", "paired");
  for (const Shape& s : kShapes)
    for (const Kind& kind : kKinds)
      for (int threads : thread_counts) {
        const int bits = kind.bits;
        const double read_us = c.get(read_key(f.mem(), threads));
        const double read_gbps = read_us > 0 ? static_cast<double>(f.mem()) * 1e-3 / read_us : 0.0;
        const double dense_us = c.get(key(s, kind, false, threads));
        bool printed = false;
        for (bool sparse : {false, true}) {
          const double us = c.get(key(s, kind, sparse, threads));
          const auto pair = g_pair_ratios.find(sparse ? paired_key(s, kind, threads) : read_paired_key(s, kind, threads));
          const bool has_pair = pair != g_pair_ratios.end() && !pair->second.empty();
          if (us == 0 && !has_pair) continue;  // filtered out
          const double bytes = static_cast<double>(bytes_read(f.bytes(s, bits, sparse), s.out, kind));
          char time[16] = "-", gbps[16] = "-", pct[16] = "-", pct_paired[16] = "-", cost[16] = "-", paired[16] = "-";
          if (us > 0) {
            const double rate = bytes * 1e-3 / us;  // GB/s
            std::snprintf(time, sizeof time, "%.1f", us);
            std::snprintf(gbps, sizeof gbps, "%.2f", rate);
            if (read_gbps > 0) std::snprintf(pct, sizeof pct, "%.0f", 100 * rate / read_gbps);
            if (sparse && dense_us > 0) std::snprintf(cost, sizeof cost, "%+.1f%%", 100 * (us / dense_us - 1));
          }
          if (has_pair && !sparse) std::snprintf(pct_paired, sizeof pct_paired, "%.0f", 100 * median(pair->second));
          if (has_pair && sparse) std::snprintf(paired, sizeof paired, "%+.1f%%", 100 * (median(pair->second) - 1));
          std::printf("%-26s %-9s %3d | %8ld %8.2f %7s %7s %6s %7s | %9s %9s\n",
                      (std::string(s.what) + " " + std::to_string(s.in) + "x" + std::to_string(s.out)).c_str(),
                      (kind.name() + (sparse ? "+csr" : "")).c_str(), threads,
                      static_cast<long>(f.nnz(s, bits, sparse)), bytes * 1e-6, time, gbps, pct, pct_paired, cost,
                      paired);
          printed = true;
        }
        if (printed && read_gbps > 0) std::printf("%-26s %-9s %3d | read %.2f GB/s\n", "", "", threads, read_gbps);
      }
}

}  // namespace
}  // namespace fsq

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (const char* vbmi = std::getenv("FSQ_LUT_VBMI"); vbmi != nullptr && std::string(vbmi) == "0")
    fsq::cpu::set_lut_vbmi_allowed(false);
  std::vector<int> thread_counts = {1};
  const int all = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (all > 1) thread_counts.push_back(all);
  fsq::Fixtures fixtures(fsq::bench::mem_bytes());
  fsq::register_all(fixtures, thread_counts);
  fsq::bench::Collector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  fsq::print_table(collector, fixtures, thread_counts);
  benchmark::Shutdown();
  return 0;
}
