// The tensor-core W4 GEMV (w4_mma_gemv.cu), for the dispatcher in quant_gemv.cu. CUDA
// translation units only.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "runtime/cuda/quant_gemv.h"

namespace fsq::cuda::detail {

// 4-bit codes, cols and group size multiples of 64: the shapes the tensor-core kernel takes
// (sm_80 or newer; the dispatcher checks the device).
bool w4_mma_applies(const cpu::UniformWeightsView& w);
// Arguments already checked by uniform_gemv; m in 1..16.
std::string launch_w4_mma(const cpu::UniformWeightsView& w, const void* x, int64_t m, int64_t x_stride, void* y,
                          int64_t y_stride, ActType act, cudaStream_t stream);

}  // namespace fsq::cuda::detail
