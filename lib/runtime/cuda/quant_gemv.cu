// Entry points of the quantized GEMVs: argument checks, then the per-width launchers
// (uniform_gemv_w*.cu, lut_gemv_lut*.cu).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "runtime/cuda/quant_gemv.h"
#include "runtime/cuda/w4_mma_gemv.h"

namespace fsq::cuda {
namespace detail {
template <int BITS>
std::string launch_uniform(const cpu::UniformWeightsView& w, const void* x, int64_t m, int64_t x_stride, void* y,
                           int64_t y_stride, ActType act, cudaStream_t stream);
template <int BITS>
std::string launch_lut(const cpu::LutWeightsView& w, const void* x, int64_t m, int64_t x_stride, void* y,
                       int64_t y_stride, ActType act, cudaStream_t stream);
}  // namespace detail

namespace {

constexpr int64_t kCodesPerChunk = 32;  // the kernels' unit of work along a row
constexpr int64_t kMaxGridRows = int64_t{1} << 31;

bool fail(std::string* why, const char* reason) {
  if (why) *why = reason;
  return false;
}

bool batch_ok(int64_t m, std::string* why) {
  if (m < 1 || m > kMaxGemvBatch) return fail(why, "batch must be 1..16 rows of x");
  return true;
}

bool aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// Compute capability of the current device, major * 10 + minor (0 when unreadable).
int current_sm() {
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return major * 10 + minor;
}

// FSQ_CUDA_W4_MMA=0 sends the 4-bit type to the SIMT kernel (tests compare the two paths).
bool w4_mma_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("FSQ_CUDA_W4_MMA");
    return v == nullptr || std::string(v) != "0";
  }();
  return enabled;
}

// The activation and output pointers and strides the kernels' 16-byte loads need.
std::string check_call(const void* x, int64_t x_stride, const void* y, int64_t y_stride, int64_t rows, int64_t cols) {
  if (x == nullptr || y == nullptr) return "x and y must be device pointers";
  if (!aligned(x, 16) || x_stride % 8 != 0) return "x must be 16-byte aligned with a row stride that is a multiple of 8";
  if (x_stride < cols || y_stride < rows) return "x or y row stride shorter than its row";
  return {};
}

}  // namespace

const char* act_type_name(ActType act) { return act == ActType::F16 ? "f16" : "bf16"; }

bool uniform_gemv_can_implement(const cpu::UniformWeightsView& w, int64_t m, std::string* why) {
  if (cpu::check_uniform_view(w) != cpu::KernelStatus::Ok) return fail(why, "inconsistent uniform weight view");
  if (w.cols % kCodesPerChunk != 0 || w.group_cols % kCodesPerChunk != 0)
    return fail(why, "cols and group size must be multiples of 32");
  if (w.rows >= kMaxGridRows) return fail(why, "too many rows");
  return batch_ok(m, why);
}

bool lut_gemv_can_implement(const cpu::LutWeightsView& w, int64_t m, std::string* why) {
  // cpu::check_lut_view reads row_ptr, which lives on the device here: sizes only.
  if ((w.bits != 3 && w.bits != 4) || w.words == nullptr || w.lut == nullptr || w.rows <= 0 || w.cols <= 0 ||
      w.words_per_row != (w.cols * w.bits + 31) / 32)
    return fail(why, "inconsistent LUT weight view");
  const bool dense_only = w.row_ptr == nullptr && w.col == nullptr && w.val == nullptr && w.nnz == 0;
  const bool sparse = w.row_ptr != nullptr && w.nnz >= 0 && w.nnz <= INT32_MAX && (w.nnz == 0 || (w.col && w.val)) &&
                      (w.col_type == cpu::LutColType::I32 || w.cols <= 65536);
  if (!dense_only && !sparse) return fail(why, "inconsistent CSR part");
  if (w.cols % kCodesPerChunk != 0) return fail(why, "cols must be a multiple of 32");
  if (w.rows >= kMaxGridRows) return fail(why, "too many rows");
  return batch_ok(m, why);
}

std::string uniform_gemv(const cpu::UniformWeightsView& w, const void* x, int64_t m, int64_t x_stride, void* y,
                         int64_t y_stride, ActType act, void* stream) {
  std::string why;
  if (!uniform_gemv_can_implement(w, m, &why)) return "uniform_gemv: " + why;
  if (std::string e = check_call(x, x_stride, y, y_stride, w.rows, w.cols); !e.empty()) return "uniform_gemv: " + e;
  // Chunks of 32 codes are bits words; 16- and 8-byte loads need the rows aligned to that.
  if (!aligned(w.words, 16)) return "uniform_gemv: weight words must be 16-byte aligned";
  auto s = static_cast<cudaStream_t>(stream);
  static const int sm = current_sm();
  if (sm >= 80 && w4_mma_enabled() && detail::w4_mma_applies(w))
    return detail::launch_w4_mma(w, x, m, x_stride, y, y_stride, act, s);
  switch (w.bits) {
    case 2: return detail::launch_uniform<2>(w, x, m, x_stride, y, y_stride, act, s);
    case 3: return detail::launch_uniform<3>(w, x, m, x_stride, y, y_stride, act, s);
    case 4: return detail::launch_uniform<4>(w, x, m, x_stride, y, y_stride, act, s);
    default: return detail::launch_uniform<8>(w, x, m, x_stride, y, y_stride, act, s);
  }
}

std::string lut_gemv(const cpu::LutWeightsView& w, const void* x, int64_t m, int64_t x_stride, void* y,
                     int64_t y_stride, ActType act, void* stream) {
  std::string why;
  if (!lut_gemv_can_implement(w, m, &why)) return "lut_gemv: " + why;
  if (std::string e = check_call(x, x_stride, y, y_stride, w.rows, w.cols); !e.empty()) return "lut_gemv: " + e;
  if (!aligned(w.words, 16)) return "lut_gemv: weight words must be 16-byte aligned";
  auto s = static_cast<cudaStream_t>(stream);
  if (w.bits == 3) return detail::launch_lut<3>(w, x, m, x_stride, y, y_stride, act, s);
  return detail::launch_lut<4>(w, x, m, x_stride, y, y_stride, act, s);
}

std::string synchronize() {
  const cudaError_t e = cudaDeviceSynchronize();
  return e == cudaSuccess ? std::string() : std::string(cudaGetErrorString(e));
}

}  // namespace fsq::cuda
