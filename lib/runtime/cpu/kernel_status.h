// What every CPU kernel family shares besides the ISA (cpu_isa.h): the status a kernel
// returns instead of throwing (the kernels are LibTorch- and exception-free; the linears turn
// a status into an fsq::Error), and the GEMV batch size.
#pragma once

#include <cstdint>

namespace fsq::cpu {

enum class KernelStatus {
  Ok,
  InvalidArgument,  // a null pointer, a bad size or stride, a view that is not self-consistent
  IsaUnavailable,   // the requested instruction set is not supported by this CPU
};
const char* kernel_status_message(KernelStatus s);

// The most rows of x a GEMV (decode) kernel multiplies in one pass over the weights; more
// rows run as batches of this many (gemv_batches.h). The linears' forward_rows takes up to
// this many rows, and more than this many run the prefill (GEMM) paths.
inline constexpr int64_t kMaxGemvRows = 8;

}  // namespace fsq::cpu
