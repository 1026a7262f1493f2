// Shared by the uniform kernel and QuantLinear tests: packed test weights, the naive
// double-precision matmul, NMSE, and output buffers with guard sentinels.
#pragma once

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../formats/quant/packed_test_support.h"
#include "formats/quant/bitpack.h"
#include "formats/quant/quant_types.h"
#include "formats/quant/uniform_reference.h"
#include "runtime/cpu/uniform_kernels.h"

namespace fsq::test {

// DESIGN.md "kernels vs reference": normalized MSE of an optimized matmul vs the reference.
constexpr double kKernelNmse = 5e-4;

// One quantized matrix in canonical and packed form.
struct PackedWeights {
  QuantizedMatrix canonical;
  std::vector<uint32_t> words;

  PackedWeights(const UniformQuant& q, int64_t rows, int64_t cols, uint32_t seed)
      : canonical(quantized(rows, cols, q, seed)),
        words(pack_rows(canonical.codes, rows, cols, q.bits)) {}

  cpu::UniformWeightsView view() const {
    cpu::UniformWeightsView v;
    v.words = words.data();
    v.rows = canonical.rows;
    v.cols = canonical.cols;
    v.words_per_row = packed_words_per_row(canonical.quant.bits, canonical.cols);
    v.bits = canonical.quant.bits;
    v.group_cols = canonical.quant.group_cols(canonical.cols);
    v.scales = canonical.scales.data();
    v.zeros = canonical.quant.symmetric ? nullptr : canonical.zeros.data();
    return v;
  }
  std::vector<float> dequantized() const {
    std::vector<float> w(canonical.codes.size());
    dequantize_uniform(canonical, w.data());
    return w;
  }
};

// Activations [m, stride] ~ N(0, 1) plus an offset (a nonzero mean exercises the zero-point
// term), with NaN in the columns past `cols`: a kernel reading them poisons its output.
inline std::vector<float> activations(int64_t m, int64_t cols, int64_t stride, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.3f, 1.0f);
  std::vector<float> x(static_cast<size_t>(m * stride), std::nanf(""));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t k = 0; k < cols; ++k) x[static_cast<size_t>(i * stride + k)] = normal(rng);
  return x;
}

// y[i, n] = sum_k x[i, k] * w[n, k] in double; y is [m, rows] dense.
inline std::vector<double> naive_matmul(const std::vector<float>& w, int64_t rows, int64_t cols, const float* x,
                                        int64_t m, int64_t x_stride) {
  std::vector<double> y(static_cast<size_t>(m * rows));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t n = 0; n < rows; ++n) {
      double s = 0.0;
      for (int64_t k = 0; k < cols; ++k)
        s += static_cast<double>(x[i * x_stride + k]) * static_cast<double>(w[static_cast<size_t>(n * cols + k)]);
      y[static_cast<size_t>(i * rows + n)] = s;
    }
  return y;
}

// Normalized MSE of got[0..n) vs ref[0..n); NaN/Inf in got fail.
inline ::testing::AssertionResult nmse_within(const float* got, const float* ref, int64_t n, double limit) {
  double err = 0.0, energy = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    if (!std::isfinite(got[j])) return ::testing::AssertionFailure() << "output " << j << " is " << got[j];
    const double d = static_cast<double>(got[j]) - ref[j];
    err += d * d;
    energy += static_cast<double>(ref[j]) * ref[j];
  }
  const double nmse = energy > 0 ? err / energy : err;
  if (nmse <= limit) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "NMSE " << nmse << " > " << limit;
}

// Row-stride gaps of the kernel tests, so that a kernel that ignores the strides fails.
constexpr int64_t kXPadding = 5;  // x row stride = cols + this (NaN-filled) gap
constexpr int64_t kYPadding = 3;  // y row stride = rows + this (canary-filled) gap

// A copy of `bytes` bytes that ends right before an unreadable page: a kernel reading past
// them crashes the test.
class BytesBeforeGuardPage {
 public:
  BytesBeforeGuardPage(const void* src, size_t bytes) {
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    mapped_ = (bytes + page - 1) / page * page + page;
    base_ = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base_ == MAP_FAILED) throw std::runtime_error("mmap failed");
    char* guard = static_cast<char*>(base_) + mapped_ - page;
    if (mprotect(guard, page, PROT_NONE) != 0) throw std::runtime_error("mprotect failed");
    data_ = guard - bytes;
    std::memcpy(data_, src, bytes);
  }
  ~BytesBeforeGuardPage() { munmap(base_, mapped_); }
  BytesBeforeGuardPage(const BytesBeforeGuardPage&) = delete;
  BytesBeforeGuardPage& operator=(const BytesBeforeGuardPage&) = delete;
  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(data_);
  }

 private:
  void* base_ = nullptr;
  size_t mapped_ = 0;
  char* data_ = nullptr;
};

// An output matrix [rows, cols] with row stride `stride` >= cols, surrounded by guard
// floats, every float that is not an output element holding a canary bit pattern.
class GuardedOutput {
 public:
  static constexpr int64_t kGuard = 64;
  static constexpr uint32_t kCanaryBits = 0x7fc0dead;  // a NaN no kernel produces

  GuardedOutput(int64_t rows, int64_t cols, int64_t stride)
      : rows_(rows), cols_(cols), stride_(stride), buf_(static_cast<size_t>(rows * stride + 2 * kGuard)) {
    for (float& f : buf_) std::memcpy(&f, &kCanaryBits, sizeof f);
  }
  float* data() { return buf_.data() + kGuard; }
  int64_t stride() const { return stride_; }
  float at(int64_t r, int64_t c) const { return buf_[static_cast<size_t>(kGuard + r * stride_ + c)]; }
  // The outputs, densely packed [rows, cols].
  std::vector<float> dense() const {
    std::vector<float> out;
    for (int64_t r = 0; r < rows_; ++r)
      for (int64_t c = 0; c < cols_; ++c) out.push_back(at(r, c));
    return out;
  }
  // Success when every non-output float still holds the canary.
  ::testing::AssertionResult guards_intact() const {
    for (size_t j = 0; j < buf_.size(); ++j) {
      const int64_t off = static_cast<int64_t>(j) - kGuard;
      const bool output = off >= 0 && off < rows_ * stride_ && off % stride_ < cols_;
      uint32_t bits;
      std::memcpy(&bits, &buf_[j], sizeof bits);
      if (!output && bits != kCanaryBits)
        return ::testing::AssertionFailure() << "stray write at buffer offset " << off;
    }
    return ::testing::AssertionSuccess();
  }

 private:
  int64_t rows_, cols_, stride_;
  std::vector<float> buf_;
};

// Every (K, group size) pair the tests run: K not a multiple of 64 (96, 100, 37), model
// widths (576, 1536); per-channel rows of odd length end in a partial vector.
struct KGroup {
  int64_t cols;
  int64_t group_size;  // 0: per-channel
};
inline const std::vector<KGroup>& test_k_groups() {
  static const std::vector<KGroup> all = {{96, 32}, {96, 0},  {100, 0}, {37, 0},   {576, 32},  {576, 64},
                                          {576, 0}, {1536, 32}, {1536, 64}, {1536, 128}, {1536, 0}};
  return all;
}

inline std::vector<cpu::CpuIsa> supported_isas() {
  std::vector<cpu::CpuIsa> out;
  for (cpu::CpuIsa isa : {cpu::CpuIsa::Scalar, cpu::CpuIsa::Avx2, cpu::CpuIsa::Avx512})
    if (cpu::cpu_supports(isa)) out.push_back(isa);
  return out;
}

inline std::string quant_label(const UniformQuant& q, int64_t rows, int64_t cols) {
  return uniform_quant_name(q) + " [" + std::to_string(rows) + " x " + std::to_string(cols) + "]";
}

}  // namespace fsq::test
