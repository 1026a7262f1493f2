// The CUDA backend's C++ face: raw pointers and sizes, no CUDA or LibTorch types, so every
// translation unit can include it whether or not the build has CUDA.
#pragma once

#include <string>

namespace fsq::cuda {

// True when this build compiled the CUDA sources (FSQ_CUDA=AUTO found nvcc, or ON).
bool compiled();
// Number of usable GPUs; 0 when the backend is not compiled, no driver, or no device.
int device_count();
// One line describing device 0 ("NVIDIA H100 80GB HBM3, sm_90, 79.1 GiB") or why there is none.
std::string describe();

// RMSNorm of `rows` rows of `cols` floats on device memory: y = w * x / sqrt(mean(x^2) + eps).
// Returns "" on success, else the CUDA error text. Reference: rms_norm_reference below.
std::string rms_norm_f32(const float* x_dev, const float* w_dev, float* y_dev, int rows, int cols, float eps);

// Host copies for tests and tools; return "" or the CUDA error text.
std::string copy_to_device(void** dev, const void* host, size_t bytes);
std::string copy_to_host(void* host, const void* dev, size_t bytes);
void free_device(void* dev);

// Scalar reference of rms_norm_f32 on host memory (the spec the kernel is tested against).
void rms_norm_reference(const float* x, const float* w, float* y, int rows, int cols, float eps);

}  // namespace fsq::cuda
