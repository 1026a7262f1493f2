// Entry points of the fast int8 kernels: argument checks, the variant behind each CpuIsa,
// activation quantization into a zero-padded scratch buffer, and the OpenMP split of the
// GEMM into tasks (a panel of output-row blocks times a chunk of x rows).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "runtime/cpu/int8_isa.h"
#include "runtime/cpu/int8_kernels.h"

namespace fsq::cpu {
namespace {

// Up to this many rows of x share one pass over the weights (decode GEMV); beyond, x is
// cut into chunks of kRowChunk rows, each multiplied by a panel that stays in L2.
// K is not tiled: a panel of K = 4096 (256 KiB) still sits in L2 next to a chunk of x
// (384 KiB) while every 6-row tile of the chunk streams over it, and the VNNI tile keeps
// vpdpbusd busy (bench_int8_kernels: ~440 GOPS on one Zen 4 core at M = 512, 4096^2).
constexpr int64_t kGemvRows = 8;
constexpr int64_t kRowChunk = 96;
constexpr int64_t kPanelBlocks = 4;  // 64 output rows per task
// Below this many multiply-adds per call, starting threads costs more than it saves.
constexpr int64_t kParallelMinMacs = int64_t{1} << 18;
constexpr int64_t kScratchAlign = 64;  // x rows start on a cache line

Int8TilesFn tiles_for(Int8Kernel k) {
  switch (k) {
    case Int8Kernel::Avx512Vnni: return int8_tiles_avx512vnni;
    case Int8Kernel::Avx512Bw: return int8_tiles_avx512bw;
    case Int8Kernel::Avx2: return int8_tiles_avx2;
    case Int8Kernel::Scalar: break;
  }
  return int8_tiles_scalar;
}

QuantizeRowFn quantize_for(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Avx512: return quantize_row_int8_avx512;
    case CpuIsa::Avx2: return quantize_row_int8_avx2;
    case CpuIsa::Scalar: break;
  }
  return quantize_row_int8_scalar;
}

CpuIsa isa_of(Int8Kernel k) {
  switch (k) {
    case Int8Kernel::Avx512Vnni:
    case Int8Kernel::Avx512Bw: return CpuIsa::Avx512;
    case Int8Kernel::Avx2: return CpuIsa::Avx2;
    case Int8Kernel::Scalar: break;
  }
  return CpuIsa::Scalar;
}

bool prepared_ok(const Int8PreparedView& w) {
  return w.data != nullptr && w.scales != nullptr && w.rows > 0 && w.cols > 0;
}

bool linear_args_ok(const Int8PreparedView& w, const float* x, int64_t m, int64_t x_stride, ActQuant mode,
                    float static_scale, const float* y, int64_t y_stride) {
  return prepared_ok(w) && x != nullptr && y != nullptr && m > 0 && x_stride >= w.cols && y_stride >= w.rows &&
         static_scale_ok(mode, static_scale);
}

bool gemm_args_ok(const Int8PreparedView& w, const int8_t* xq, int64_t m, int64_t xq_stride, const int32_t* acc,
                  int64_t acc_stride) {
  return prepared_ok(w) && xq != nullptr && acc != nullptr && m > 0 && xq_stride >= w.cols && acc_stride >= w.rows;
}

// x codes [m, stride] (zero past cols), their row sums (the VNNI kernel's bias correction)
// and scales.
struct Activations {
  std::vector<int8_t> buffer;
  int8_t* q = nullptr;
  int64_t stride = 0;
  std::vector<int32_t> sums;
  std::vector<float> scales;

  Activations(int64_t m, int64_t cols)
      : stride((int8_padded_cols(cols) + kScratchAlign - 1) / kScratchAlign * kScratchAlign),
        sums(static_cast<size_t>(m)),
        scales(static_cast<size_t>(m)) {
    buffer.assign(static_cast<size_t>(m * stride + kScratchAlign), 0);
    const auto misalignment = reinterpret_cast<uintptr_t>(buffer.data()) % kScratchAlign;
    q = buffer.data() + (kScratchAlign - misalignment) % kScratchAlign;
  }
  int8_t* row(int64_t i) { return q + i * stride; }
};

// Calls fn(i) for i in [0, m), on all threads when the rows are long enough to pay.
template <typename Fn>
void for_each_row(int64_t m, int64_t cols, const Fn& fn) {
#pragma omp parallel for schedule(static) if (m * cols >= kParallelMinMacs)
  for (int64_t i = 0; i < m; ++i) fn(i);
}

int32_t code_sum(const int8_t* q, int64_t cols) {
  int32_t s = 0;
  for (int64_t k = 0; k < cols; ++k) s += q[k];
  return s;
}

// The whole [m, rows] output, in tasks of kPanelBlocks blocks times a chunk of x rows,
// consecutive tasks sharing a panel (read from memory once, then from cache). Handed out
// dynamically: on a shared machine a thread that loses its core for a while would
// otherwise hold up the others at the barrier with its static share.
void run_tiles(const Int8Gemm& g, int64_t m, Int8TilesFn fn) {
  const int64_t blocks = (g.rows + kInt8BlockRows - 1) / kInt8BlockRows;
  const int64_t panels = (blocks + kPanelBlocks - 1) / kPanelBlocks;
  const int64_t chunk = m <= kGemvRows ? m : kRowChunk;
  const int64_t chunks = (m + chunk - 1) / chunk;
  const int64_t tasks = panels * chunks;
#pragma omp parallel for schedule(dynamic) if (m * g.rows * g.kp >= kParallelMinMacs)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t p = t / chunks, c = t % chunks;
    fn(g, c * chunk, std::min(m, (c + 1) * chunk), p * kPanelBlocks, std::min(blocks, (p + 1) * kPanelBlocks));
  }
}

Int8Gemm gemm_of(const Int8PreparedView& w, const Activations& a) {
  Int8Gemm g;
  g.w = reinterpret_cast<const uint8_t*>(w.data);
  g.rows = w.rows;
  g.kp = int8_padded_cols(w.cols);
  g.xq = a.q;
  g.xq_stride = a.stride;
  g.x_sums = a.sums.data();
  return g;
}

}  // namespace

Int8Kernel int8_kernel_for(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Avx512: return cpu_has_avx512_vnni() ? Int8Kernel::Avx512Vnni : Int8Kernel::Avx512Bw;
    case CpuIsa::Avx2: return Int8Kernel::Avx2;
    case CpuIsa::Scalar: break;
  }
  return Int8Kernel::Scalar;
}

bool int8_kernel_supported(Int8Kernel k) {
  return k == Int8Kernel::Avx512Vnni ? cpu_has_avx512_vnni() : cpu_supports(isa_of(k));
}

const char* int8_kernel_name(Int8Kernel k) {
  switch (k) {
    case Int8Kernel::Scalar: return "scalar";
    case Int8Kernel::Avx2: return "avx2";
    case Int8Kernel::Avx512Bw: return "avx512bw";
    case Int8Kernel::Avx512Vnni: return "avx512vnni";
  }
  return "unknown";
}

KernelStatus quantize_activations_int8(const float* x, int64_t m, int64_t cols, int64_t x_stride, ActQuant mode,
                                       float static_scale, int8_t* q, int64_t q_stride, float* x_scales,
                                       CpuIsa isa) {
  if (x == nullptr || q == nullptr || x_scales == nullptr || m <= 0 || cols <= 0 || x_stride < cols ||
      q_stride < cols || !static_scale_ok(mode, static_scale))
    return KernelStatus::InvalidArgument;
  if (!cpu_supports(isa)) return KernelStatus::IsaUnavailable;
  const QuantizeRowFn fn = quantize_for(isa);
  for_each_row(m, cols, [&](int64_t i) {
    fn(x + i * x_stride, cols, mode, static_scale, q + i * q_stride, x_scales + i);
  });
  return KernelStatus::Ok;
}

KernelStatus int8_linear_with(const Int8PreparedView& w, const float* x, int64_t m, int64_t x_stride, ActQuant mode,
                              float static_scale, float* y, int64_t y_stride, Int8Kernel kernel) {
  if (!linear_args_ok(w, x, m, x_stride, mode, static_scale, y, y_stride)) return KernelStatus::InvalidArgument;
  if (!int8_kernel_supported(kernel)) return KernelStatus::IsaUnavailable;
  Activations a(m, w.cols);
  const QuantizeRowFn quantize = quantize_for(isa_of(kernel));
  for_each_row(m, w.cols, [&](int64_t i) {
    quantize(x + i * x_stride, w.cols, mode, static_scale, a.row(i), &a.scales[static_cast<size_t>(i)]);
    a.sums[static_cast<size_t>(i)] = code_sum(a.row(i), w.cols);
  });
  Int8Gemm g = gemm_of(w, a);
  g.x_scales = a.scales.data();
  g.w_scales = w.scales;
  g.y = y;
  g.y_stride = y_stride;
  run_tiles(g, m, tiles_for(kernel));
  return KernelStatus::Ok;
}

KernelStatus int8_linear(const Int8PreparedView& w, const float* x, int64_t m, int64_t x_stride, ActQuant mode,
                         float static_scale, float* y, int64_t y_stride, CpuIsa isa) {
  if (!linear_args_ok(w, x, m, x_stride, mode, static_scale, y, y_stride)) return KernelStatus::InvalidArgument;
  if (!cpu_supports(isa)) return KernelStatus::IsaUnavailable;
  return int8_linear_with(w, x, m, x_stride, mode, static_scale, y, y_stride, int8_kernel_for(isa));
}

KernelStatus int8_gemm_int32_with(const Int8PreparedView& w, const int8_t* xq, int64_t m, int64_t xq_stride,
                                  int32_t* acc, int64_t acc_stride, Int8Kernel kernel) {
  if (!gemm_args_ok(w, xq, m, xq_stride, acc, acc_stride)) return KernelStatus::InvalidArgument;
  if (!int8_kernel_supported(kernel)) return KernelStatus::IsaUnavailable;
  Activations a(m, w.cols);
  for_each_row(m, w.cols, [&](int64_t i) {
    std::memcpy(a.row(i), xq + i * xq_stride, static_cast<size_t>(w.cols));
    a.sums[static_cast<size_t>(i)] = code_sum(a.row(i), w.cols);
  });
  Int8Gemm g = gemm_of(w, a);
  g.acc = acc;
  g.acc_stride = acc_stride;
  run_tiles(g, m, tiles_for(kernel));
  return KernelStatus::Ok;
}

KernelStatus int8_gemm_int32(const Int8PreparedView& w, const int8_t* xq, int64_t m, int64_t xq_stride,
                             int32_t* acc, int64_t acc_stride, CpuIsa isa) {
  if (!gemm_args_ok(w, xq, m, xq_stride, acc, acc_stride)) return KernelStatus::InvalidArgument;
  if (!cpu_supports(isa)) return KernelStatus::IsaUnavailable;
  return int8_gemm_int32_with(w, xq, m, xq_stride, acc, acc_stride, int8_kernel_for(isa));
}

}  // namespace fsq::cpu
