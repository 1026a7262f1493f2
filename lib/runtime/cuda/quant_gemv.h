// Quantized GEMV kernels of the CUDA backend (decode, batch 1..16): the packed uniform types
// (W2/3/4/8, group-wise fp16 scales, optional zero points) and the LUT types (3/4-bit codes,
// one fp16 table per row, optional CSR part), with fp16 or bf16 activations and outputs.
// The weights use the file layout of lib/formats/FORMAT.md, uploaded to device memory as is:
// the views below are the CPU kernels' views holding device pointers. No CUDA types here.
//
// Semantics are the CPU references' (cpu::uniform_matmul_reference, cpu::lut_matmul_reference):
// y[i, n] = sum_k x[i, k] * w'[n, k]; sums run in float, outputs are rounded to the
// activation type once.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/cpu/lut_kernels.h"
#include "runtime/cpu/uniform_kernels.h"

namespace fsq::cuda {

enum class ActType { F16, BF16 };
const char* act_type_name(ActType act);  // "f16", "bf16"

// The largest batch one call takes (more rows of x: call again on the next slice).
inline constexpr int64_t kMaxGemvBatch = 16;

// Whether uniform_gemv handles this weight view and batch; when not and `why` is given, says
// why (cols or group size not a multiple of 32, batch out of 1..kMaxGemvBatch, ...). Checks
// sizes only: the launcher also checks the device pointers' alignment.
bool uniform_gemv_can_implement(const cpu::UniformWeightsView& w, int64_t m, std::string* why = nullptr);
bool lut_gemv_can_implement(const cpu::LutWeightsView& w, int64_t m, std::string* why = nullptr);

// y [m, w.rows] (row stride y_stride) = x [m, w.cols] (row stride x_stride) times w'^T, all
// pointers in device memory; x and y hold `act` values. x must be 16-byte aligned with
// x_stride a multiple of 8. Launches on `stream` (a cudaStream_t; nullptr is the default
// stream) and returns without waiting: "" when launched, else the reason (nothing launched).
// Writes only y[i, 0..w.rows) for i < m. Deterministic: a fixed order of sums per output.
std::string uniform_gemv(const cpu::UniformWeightsView& w, const void* x, int64_t m, int64_t x_stride, void* y,
                         int64_t y_stride, ActType act, void* stream = nullptr);
// The LUT GEMV with the CSR part fused: each output row's nonzeros are added by the warp
// that computes the row's dense part. The CSR part must have passed cpu::check_lut_sparse
// on the host (columns are used as indices without further checks).
std::string lut_gemv(const cpu::LutWeightsView& w, const void* x, int64_t m, int64_t x_stride, void* y,
                     int64_t y_stride, ActType act, void* stream = nullptr);

// Waits for the device; "" or the CUDA error text (an asynchronous kernel fault shows here).
std::string synchronize();

}  // namespace fsq::cuda
