// What the CUDA benchmarks share: the error check, the read-only bandwidth kernel they
// measure themselves against, and timing by CUDA-graph replay. CUDA translation units only.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace fsq::bench {

#define CHECK_CUDA(call)                                                                  \
  do {                                                                                    \
    cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

namespace {  // each benchmark is one translation unit with its own copy

// Reads every 16-byte word once; the xor keeps the loads alive.
__global__ void read_kernel(const uint4* __restrict__ p, size_t n, unsigned* sink) {
  uint32_t acc = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint4 v = __ldg(p + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

}  // namespace

inline int read_grid() {
  int sms = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  return sms * 8;
}

// Mean microseconds per call of `launch(i, stream)` over `reps` calls: the calls are captured
// in one CUDA graph and replayed, so host launch overhead does not count (a decode step
// replays its graph the same way).
template <class Launch>
double time_us(int reps, Launch launch) {
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (int i = 0; i < 10; ++i) launch(i, stream);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  cudaGraph_t graph;
  CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < reps; ++i) launch(i, stream);
  CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  CHECK_CUDA(cudaGraphLaunch(exec, stream));  // warm-up replay
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  CHECK_CUDA(cudaEventRecord(start, stream));
  CHECK_CUDA(cudaGraphLaunch(exec, stream));
  CHECK_CUDA(cudaEventRecord(stop, stream));
  CHECK_CUDA(cudaEventSynchronize(stop));
  float ms = 0.f;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
  CHECK_CUDA(cudaGetLastError());
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  return 1000.0 * ms / reps;
}

// The read kernel's GB/s over a 1 GiB buffer (the machine's achievable read bandwidth).
inline double read_gbs_1gib(unsigned* sink) {
  const size_t big = size_t{1} << 30;
  void* buf = nullptr;
  CHECK_CUDA(cudaMalloc(&buf, big));
  CHECK_CUDA(cudaMemset(buf, 1, big));
  const int grid = read_grid();
  const double us = time_us(20, [&](int, cudaStream_t stream) {
    read_kernel<<<grid, 256, 0, stream>>>(static_cast<const uint4*>(buf), big / 16, sink);
  });
  CHECK_CUDA(cudaFree(buf));
  return big / us / 1e3;
}

}  // namespace fsq::bench
