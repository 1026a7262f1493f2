// CUDA kernels of the fsq runtime. Raw pointers in, status string out; compiled whenever
// nvcc is present, run only where a GPU is.
#include <cuda_runtime.h>

#include <cstdio>

#include "runtime/cuda/cuda_backend.h"

namespace fsq::cuda {
namespace {

constexpr int kThreads = 256;

// One block per row: a block-wide sum of squares, then the scaled copy.
__global__ void rms_norm_kernel(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                                int cols, float eps) {
  __shared__ float partial[kThreads];
  const float* xr = x + static_cast<size_t>(blockIdx.x) * cols;
  float* yr = y + static_cast<size_t>(blockIdx.x) * cols;
  float ss = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) ss += xr[c] * xr[c];
  partial[threadIdx.x] = ss;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  const float inv = rsqrtf(partial[0] / cols + eps);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = w[c] * (xr[c] * inv);
}

std::string status(cudaError_t e) { return e == cudaSuccess ? std::string() : std::string(cudaGetErrorString(e)); }

}  // namespace

bool compiled() { return true; }

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

std::string describe() {
  if (device_count() == 0) return "CUDA backend compiled; no GPU visible";
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return "CUDA backend compiled; device 0 unreadable";
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s, sm_%d%d, %.1f GiB", p.name, p.major, p.minor,
                static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

std::string rms_norm_f32(const float* x_dev, const float* w_dev, float* y_dev, int rows, int cols, float eps) {
  if (rows <= 0 || cols <= 0) return "rms_norm_f32: rows and cols must be positive";
  rms_norm_kernel<<<rows, kThreads>>>(x_dev, w_dev, y_dev, cols, eps);
  std::string launch = status(cudaGetLastError());
  if (!launch.empty()) return launch;
  return status(cudaDeviceSynchronize());
}

std::string copy_to_device(void** dev, const void* host, size_t bytes) {
  std::string s = status(cudaMalloc(dev, bytes));
  if (!s.empty()) return s;
  return status(cudaMemcpy(*dev, host, bytes, cudaMemcpyHostToDevice));
}

std::string copy_to_host(void* host, const void* dev, size_t bytes) {
  return status(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost));
}

void free_device(void* dev) { cudaFree(dev); }

}  // namespace fsq::cuda
