// The LUT-3 GEMV kernels (one file per width so nvcc builds them in parallel).
#include "runtime/cuda/lut_gemv_kernel.cuh"

namespace fsq::cuda::detail {
template std::string launch_lut<3>(const cpu::LutWeightsView&, const void*, int64_t, int64_t, void*, int64_t, ActType,
                                   cudaStream_t);
}  // namespace fsq::cuda::detail
