// GPU benchmark of the quantized GEMVs (lib/runtime/cuda/quant_gemv.h) at LLaMA-7B shapes,
// against a read-only bandwidth kernel measured in the same run. Each case rotates through
// enough copies of its weights (at least 4, and 2.5x the L2 size in all) that L2 cannot
// serve them, and times >= 200 launches captured in a CUDA graph, with CUDA events.
//
//   bench_cuda_kernels [--json out.json] [--reps 200] [--sweep]
//
// --sweep first times the batch-1 kernels' work split (rows per warp R, chunks in flight U,
// warps per block) for W4 g128 and LUT-3 at three shapes, to pick the launcher's defaults.
//
// Prints, per case, microseconds per call, weight GB/s and the ratio to the read kernel
// (over a 1 GiB buffer, and over the same bytes with the same rotation). The fp16 cuBLAS and
// PyTorch int4/int8 baselines are timed by scripts/cuda-torch-baselines.py, which reads the
// JSON this writes and prints the ratios.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda_bench_support.cuh"
#include "runtime/cuda/cuda_backend.h"
#include "runtime/cuda/lut_gemv_kernel.cuh"
#include "runtime/cuda/quant_gemv.h"
#include "runtime/cuda/uniform_gemv_kernel.cuh"

namespace {

using fsq::cuda::ActType;

void check(const std::string& status, const char* what) {
  if (!status.empty()) {
    std::fprintf(stderr, "bench_cuda_kernels: %s: %s\n", what, status.c_str());
    std::exit(1);
  }
}

using fsq::bench::read_grid;
using fsq::bench::read_kernel;
using fsq::bench::time_us;

template <class T>
T* upload(const std::vector<T>& host) {
  if (host.empty()) return nullptr;
  void* p = nullptr;
  CHECK_CUDA(cudaMalloc(&p, host.size() * sizeof(T)));
  CHECK_CUDA(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return static_cast<T*>(p);
}

uint16_t f16_bits(float v) {
  const __half h = __float2half_rn(v);
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}

// One weight matrix's host arrays (random: speed does not depend on the values).
struct HostWeights {
  std::string kind;  // "w4g128", "w3g128", "lut4", "lut3", "lut4+csr", "lut3+csr"
  int bits = 4;
  bool lut = false, sparse = false;
  int64_t rows = 0, cols = 0;
  std::vector<uint32_t> words;
  std::vector<uint16_t> scales_or_lut, val;
  std::vector<uint8_t> zeros;
  std::vector<int32_t> row_ptr;
  std::vector<uint16_t> col;
  size_t bytes() const {
    return words.size() * 4 + scales_or_lut.size() * 2 + zeros.size() + val.size() * 2 + row_ptr.size() * 4 +
           col.size() * 2;
  }
};

HostWeights make_weights(const std::string& kind, int64_t rows, int64_t cols, std::mt19937& rng) {
  HostWeights w;
  w.kind = kind;
  w.lut = kind.rfind("lut", 0) == 0;
  w.bits = kind[w.lut ? 3 : 1] - '0';
  w.sparse = kind.find("csr") != std::string::npos;
  w.rows = rows;
  w.cols = cols;
  const int64_t words_per_row = (cols * w.bits + 31) / 32;
  w.words.resize(static_cast<size_t>(rows * words_per_row));
  for (uint32_t& v : w.words) v = rng();
  std::uniform_real_distribution<float> small(-0.05f, 0.05f);
  if (w.lut) {
    w.scales_or_lut.resize(static_cast<size_t>(rows << w.bits));
    for (uint16_t& v : w.scales_or_lut) v = f16_bits(small(rng));
  } else {
    const int64_t groups = rows * (cols / 128);
    w.scales_or_lut.resize(static_cast<size_t>(groups));
    w.zeros.resize(static_cast<size_t>(groups));
    for (uint16_t& v : w.scales_or_lut) v = f16_bits(std::abs(small(rng)) + 0.001f);
    for (uint8_t& z : w.zeros) z = static_cast<uint8_t>(rng() % (1u << w.bits));
  }
  if (w.sparse) {  // 0.45 % of the weights, spread at random over the rows
    std::bernoulli_distribution keep(0.0045);
    w.row_ptr.push_back(0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = 0; k < cols; ++k) {
        if (!keep(rng)) continue;
        w.col.push_back(static_cast<uint16_t>(k));
        w.val.push_back(f16_bits(small(rng)));
      }
      w.row_ptr.push_back(static_cast<int32_t>(w.col.size()));
    }
  }
  return w;
}

struct DeviceWeights {
  fsq::cpu::UniformWeightsView uniform;
  fsq::cpu::LutWeightsView lut;
};

DeviceWeights upload_weights(const HostWeights& h) {
  DeviceWeights d;
  const int64_t words_per_row = (h.cols * h.bits + 31) / 32;
  if (h.lut) {
    d.lut.words = upload(h.words);
    d.lut.rows = h.rows;
    d.lut.cols = h.cols;
    d.lut.words_per_row = words_per_row;
    d.lut.bits = h.bits;
    d.lut.lut = upload(h.scales_or_lut);
    if (h.sparse) {
      d.lut.row_ptr = upload(h.row_ptr);
      d.lut.col = upload(h.col);
      d.lut.col_type = fsq::cpu::LutColType::U16;
      d.lut.val = upload(h.val);
      d.lut.nnz = static_cast<int64_t>(h.col.size());
    }
  } else {
    d.uniform.words = upload(h.words);
    d.uniform.rows = h.rows;
    d.uniform.cols = h.cols;
    d.uniform.words_per_row = words_per_row;
    d.uniform.bits = h.bits;
    d.uniform.group_cols = 128;
    d.uniform.scales = upload(h.scales_or_lut);
    d.uniform.zeros = upload(h.zeros);
  }
  return d;
}

void free_weights(const DeviceWeights& d) {
  for (const void* p : {static_cast<const void*>(d.uniform.words), static_cast<const void*>(d.uniform.scales),
                        static_cast<const void*>(d.uniform.zeros), static_cast<const void*>(d.lut.words),
                        static_cast<const void*>(d.lut.lut), static_cast<const void*>(d.lut.row_ptr), d.lut.col,
                        static_cast<const void*>(d.lut.val)})
    cudaFree(const_cast<void*>(p));
}

// Copies of one matrix that together are 2.5x the L2 size (at least 4), so that rotating
// through them reads from memory, not L2.
int copies_for(size_t bytes) {
  int l2 = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  return static_cast<int>(std::max<size_t>(4, (static_cast<size_t>(2.5 * l2) + bytes - 1) / bytes));
}

double read_same_us(size_t bytes, int copies, int reps, unsigned* sink) {
  std::vector<void*> bufs(static_cast<size_t>(copies));
  for (void*& p : bufs) {
    CHECK_CUDA(cudaMalloc(&p, bytes));
    CHECK_CUDA(cudaMemset(p, 1, bytes));
  }
  const int grid = read_grid();
  const double us = time_us(reps, [&](int i, cudaStream_t stream) {
    read_kernel<<<grid, 256, 0, stream>>>(static_cast<const uint4*>(bufs[i % copies]), bytes / 16, sink);
  });
  for (void* p : bufs) cudaFree(p);
  return us;
}

// Batch-1 W4 g128 and LUT-3 kernels with the work split <R, U, WARPS>, timed like the cases.
template <int R, int U, int WARPS>
void sweep_split(const std::vector<DeviceWeights>& w4, const std::vector<DeviceWeights>& lut3, const uint16_t* x,
                 void* y, int64_t rows, int64_t cols, int reps, double same_w4_us, double same_lut3_us) {
  const dim3 grid(static_cast<unsigned>((rows + R * WARPS - 1) / (R * WARPS)));
  const auto* xh = reinterpret_cast<const __half*>(x);
  auto* yh = static_cast<__half*>(y);
  const double w4_us = time_us(reps, [&](int i, cudaStream_t stream) {
    fsq::cuda::detail::uniform_gemv_kernel<4, __half, 1, R, U, WARPS>
        <<<grid, WARPS * 32, 0, stream>>>(w4[i % w4.size()].uniform, xh, cols, yh, rows, 1);
  });
  const double lut_us = time_us(reps, [&](int i, cudaStream_t stream) {
    fsq::cuda::detail::lut_gemv_kernel<3, __half, 1, uint16_t, R, U, WARPS>
        <<<grid, WARPS * 32, 0, stream>>>(lut3[i % lut3.size()].lut, xh, cols, yh, rows, 1);
  });
  std::printf("sweep %5lldx%-6lld R=%d U=%d warps=%d   w4g128 %7.2f us (%5.1f%% of same-bytes read)   lut3 %7.2f us "
              "(%5.1f%%)\n",
              static_cast<long long>(rows), static_cast<long long>(cols), R, U, WARPS, w4_us, 100 * same_w4_us / w4_us,
              lut_us, 100 * same_lut3_us / lut_us);
}

void sweep(int reps, unsigned* sink, std::mt19937& rng) {
  const int64_t shapes[][2] = {{4096, 4096}, {11008, 4096}, {4096, 11008}};
  for (const auto& s : shapes) {
    const HostWeights hw4 = make_weights("w4g128", s[0], s[1], rng), hl3 = make_weights("lut3", s[0], s[1], rng);
    const int c4 = copies_for(hw4.bytes()), c3 = copies_for(hl3.bytes());
    std::vector<DeviceWeights> w4, l3;
    for (int c = 0; c < c4; ++c) w4.push_back(upload_weights(hw4));
    for (int c = 0; c < c3; ++c) l3.push_back(upload_weights(hl3));
    std::vector<uint16_t> xh(static_cast<size_t>(s[1]), f16_bits(0.5f));
    uint16_t* x = upload(xh);
    void* y = nullptr;
    CHECK_CUDA(cudaMalloc(&y, s[0] * 2));
    const double same4 = read_same_us(hw4.bytes(), c4, reps, sink), same3 = read_same_us(hl3.bytes(), c3, reps, sink);
    sweep_split<1, 2, 4>(w4, l3, x, y, s[0], s[1], reps, same4, same3);
    sweep_split<1, 4, 4>(w4, l3, x, y, s[0], s[1], reps, same4, same3);
    sweep_split<1, 4, 8>(w4, l3, x, y, s[0], s[1], reps, same4, same3);
    sweep_split<1, 8, 8>(w4, l3, x, y, s[0], s[1], reps, same4, same3);
    sweep_split<2, 1, 4>(w4, l3, x, y, s[0], s[1], reps, same4, same3);
    sweep_split<2, 2, 4>(w4, l3, x, y, s[0], s[1], reps, same4, same3);
    sweep_split<2, 4, 4>(w4, l3, x, y, s[0], s[1], reps, same4, same3);
    sweep_split<2, 2, 8>(w4, l3, x, y, s[0], s[1], reps, same4, same3);
    sweep_split<2, 4, 8>(w4, l3, x, y, s[0], s[1], reps, same4, same3);
    sweep_split<4, 1, 4>(w4, l3, x, y, s[0], s[1], reps, same4, same3);
    sweep_split<4, 2, 4>(w4, l3, x, y, s[0], s[1], reps, same4, same3);
    sweep_split<4, 2, 2>(w4, l3, x, y, s[0], s[1], reps, same4, same3);
    for (const DeviceWeights& d : w4) free_weights(d);
    for (const DeviceWeights& d : l3) free_weights(d);
    cudaFree(x);
    cudaFree(y);
  }
  std::printf("\n");
}

struct Result {
  std::string kind;
  int64_t rows, cols, m;
  size_t bytes;
  int copies;
  double us, read_same_us;
};

}  // namespace

int main(int argc, char** argv) {
  std::string json_path;
  int reps = 200;
  bool run_sweep = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else if (a == "--sweep") {
      run_sweep = true;
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::max(100, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: bench_cuda_kernels [--json out.json] [--reps N>=100] [--sweep]\n");
      return 2;
    }
  }
  if (fsq::cuda::device_count() == 0) {
    std::fprintf(stderr, "bench_cuda_kernels: %s\n", fsq::cuda::describe().c_str());
    return 1;
  }
  int l2 = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  std::printf("device: %s, L2 %.0f MB\n", fsq::cuda::describe().c_str(), l2 / 1e6);
  unsigned* sink = nullptr;
  CHECK_CUDA(cudaMalloc(&sink, sizeof(unsigned)));

  // The yardstick: read-only kernel over 1 GiB.
  const double peak_gbs = fsq::bench::read_gbs_1gib(sink);
  std::printf("read kernel, 1 GiB: %.1f GB/s\n\n", peak_gbs);
  const int grid = read_grid();

  std::mt19937 rng(1234);
  if (run_sweep) sweep(reps, sink, rng);
  struct Shape {
    int64_t rows, cols;
    const char* name;
  };
  const Shape shapes[] = {{4096, 4096, "q/o_proj"}, {11008, 4096, "gate/up"}, {4096, 11008, "down"},
                          {32000, 4096, "lm_head"}};
  const char* kinds[] = {"w4g128", "w3g128", "lut4", "lut4+csr", "lut3", "lut3+csr"};
  const int batches[] = {1, 4, 16};
  std::vector<Result> results;
  std::printf("%-9s %-9s %-12s %3s %9s %9s %8s %8s\n", "shape", "kind", "N x K", "m", "us", "GB/s", "%peak",
              "%same");
  for (const Shape& s : shapes) {
    // Activations and outputs: [16, K] and [16, N] fp16, shared by every case of the shape.
    std::vector<uint16_t> xh(static_cast<size_t>(16 * s.cols));
    std::normal_distribution<float> normal(0.f, 1.f);
    for (uint16_t& v : xh) v = f16_bits(normal(rng));
    uint16_t* x = upload(xh);
    void* y = nullptr;
    CHECK_CUDA(cudaMalloc(&y, 16 * s.rows * 2));
    for (const char* kind : kinds) {
      const HostWeights hw = make_weights(kind, s.rows, s.cols, rng);
      const size_t bytes = hw.bytes();
      const int copies = copies_for(bytes);
      std::vector<DeviceWeights> dw;
      for (int c = 0; c < copies; ++c) dw.push_back(upload_weights(hw));
      // The read kernel over as many bytes, rotating as many buffers.
      std::vector<void*> same(static_cast<size_t>(copies));
      for (void*& p : same) {
        CHECK_CUDA(cudaMalloc(&p, bytes));
        CHECK_CUDA(cudaMemset(p, 1, bytes));
      }
      const double same_us = time_us(reps, [&](int i, cudaStream_t stream) {
        read_kernel<<<grid, 256, 0, stream>>>(static_cast<const uint4*>(same[i % copies]), bytes / 16, sink);
      });
      for (int m : batches) {
        const double us = time_us(reps, [&](int i, cudaStream_t stream) {
          const DeviceWeights& d = dw[static_cast<size_t>(i % copies)];
          check(hw.lut ? fsq::cuda::lut_gemv(d.lut, x, m, s.cols, y, s.rows, ActType::F16, stream)
                       : fsq::cuda::uniform_gemv(d.uniform, x, m, s.cols, y, s.rows, ActType::F16, stream),
                "launch");
        });
        const double gbs = bytes / us / 1e3;
        std::printf("%-9s %-9s %5lldx%-6lld %3d %9.2f %9.1f %7.1f%% %7.1f%%\n", s.name, kind,
                    static_cast<long long>(s.rows), static_cast<long long>(s.cols), m, us, gbs, 100 * gbs / peak_gbs,
                    100 * same_us / us);
        results.push_back({kind, s.rows, s.cols, m, bytes, copies, us, same_us});
      }
      for (const DeviceWeights& d : dw) free_weights(d);
      for (void* p : same) cudaFree(p);
    }
    cudaFree(x);
    cudaFree(y);
  }
  check(fsq::cuda::synchronize(), "synchronize");
  if (!json_path.empty()) {
    FILE* f = std::fopen(json_path.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "bench_cuda_kernels: cannot write %s\n", json_path.c_str());
      return 1;
    }
    std::fprintf(f, "{\"device\": \"%s\", \"read_gbs\": %.3f, \"reps\": %d, \"cases\": [\n",
                 fsq::cuda::describe().c_str(), peak_gbs, reps);
    for (size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      std::fprintf(f,
                   "  {\"kind\": \"%s\", \"rows\": %lld, \"cols\": %lld, \"m\": %lld, \"bytes\": %zu, \"copies\": %d, "
                   "\"us\": %.4f, \"read_same_us\": %.4f}%s\n",
                   r.kind.c_str(), static_cast<long long>(r.rows), static_cast<long long>(r.cols),
                   static_cast<long long>(r.m), r.bytes, r.copies, r.us, r.read_same_us,
                   i + 1 < results.size() ? "," : "");
    }
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }
  return 0;
}
