// The forward pass every packed CPU linear shares (QuantLinear, LutLinear): checks the
// input, runs a fused dequantize + GEMV kernel for up to cpu::kMaxGemvRows rows of x, and
// for more rows either the type's own kernel (many_rows: the int8-activation GEMM) or
// dequantizes blocks of weight rows into an f32 scratch and multiplies them with oneDNN's
// sgemm (cpu/f32_gemm.h); then adds the bias and returns y in x's dtype.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "runtime/cpu/uniform_kernels.h"

namespace fsq {

struct PackedKernels {
  // y [m, rows] = x [m, cols] W'^T (contiguous), m <= cpu::kMaxGemvRows.
  std::function<cpu::KernelStatus(const float* x, int64_t m, float* y)> gemv;
  // out [nrows, cols] = W'[row0, row0 + nrows).
  std::function<cpu::KernelStatus(int64_t row0, int64_t nrows, float* out)> dequantize_rows;
  // When set: y [m, rows] = x [m, cols] W'^T for every m (the W8A8 kernels, which quantize
  // x themselves); gemv and dequantize_rows are then unused.
  std::function<cpu::KernelStatus(const float* x, int64_t m, float* y)> matmul;
  // When set: y = x W'^T for m > cpu::kMaxGemvRows instead of dequantize_rows + at::mm (the
  // int8-activation prefill GEMM).
  std::function<cpu::KernelStatus(const float* x, int64_t m, float* y)> many_rows;
};

// x [..., cols] floating on the CPU (computed in f32) -> [..., rows]. `where` names the
// linear in errors.
at::Tensor packed_forward(const at::Tensor& x, int64_t rows, int64_t cols, const std::optional<at::Tensor>& bias,
                          const PackedKernels& kernels, const std::string& where);

// Throws fsq::Error(where, ...) unless `s` is Ok.
void check_kernel_status(cpu::KernelStatus s, const std::string& where);

}  // namespace fsq
