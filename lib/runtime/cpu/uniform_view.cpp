// Argument checks shared by every uniform kernel entry point, and status messages.
#include "runtime/cpu/uniform_kernels.h"

namespace fsq::cpu {

const char* kernel_status_message(KernelStatus s) {
  switch (s) {
    case KernelStatus::Ok: return "ok";
    case KernelStatus::InvalidArgument: return "invalid argument (null pointer, size or stride)";
    case KernelStatus::IsaUnavailable: return "instruction set not supported by this CPU";
  }
  return "unknown status";
}

KernelStatus check_uniform_view(const UniformWeightsView& w) {
  const bool bits_ok = w.bits == 2 || w.bits == 3 || w.bits == 4 || w.bits == 8;
  if (!bits_ok || w.words == nullptr || w.scales == nullptr || w.rows <= 0 || w.cols <= 0 || w.group_cols <= 0)
    return KernelStatus::InvalidArgument;
  if (w.cols % w.group_cols != 0) return KernelStatus::InvalidArgument;
  if (w.words_per_row != (w.cols * w.bits + 31) / 32) return KernelStatus::InvalidArgument;
  return KernelStatus::Ok;
}

KernelStatus check_matmul_call(const UniformWeightsView& w, const float* x, int64_t m, int64_t x_stride,
                               const float* y, int64_t y_stride) {
  if (check_uniform_view(w) != KernelStatus::Ok) return KernelStatus::InvalidArgument;
  if (m < 0 || (m > 0 && (x == nullptr || y == nullptr)) || x_stride < w.cols || y_stride < w.rows)
    return KernelStatus::InvalidArgument;
  return KernelStatus::Ok;
}

}  // namespace fsq::cpu
