// Small helpers shared by the quantize tests (LibTorch, CPU, seeded).
#pragma once

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cstdint>
#include <vector>

namespace fsq::test {

// A [rows, cols] float32 tensor from row-major values.
inline at::Tensor matrix(const std::vector<float>& values, int64_t rows, int64_t cols) {
  return at::tensor(values, at::kFloat).reshape({rows, cols});
}

inline std::vector<float> values(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kFloat).contiguous();
  return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

inline double mse(const at::Tensor& a, const at::Tensor& b) { return (a - b).pow(2).mean().item<double>(); }

// ||a - b|| / ||b||
inline double relative_error(const at::Tensor& a, const at::Tensor& b) {
  return ((a - b).norm() / b.norm()).item<double>();
}

}  // namespace fsq::test
