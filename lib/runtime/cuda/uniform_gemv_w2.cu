// The 2-bit uniform GEMV kernels (one file per width so nvcc builds them in parallel).
#include "runtime/cuda/uniform_gemv_kernel.cuh"

namespace fsq::cuda::detail {
template std::string launch_uniform<2>(const cpu::UniformWeightsView&, const void*, int64_t, int64_t, void*, int64_t,
                                       ActType, cudaStream_t);
}  // namespace fsq::cuda::detail
