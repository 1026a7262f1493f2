// The W8A8 int8 kernels against their spec (int8_kernels.h): the reference on hand-computed
// cases, the reference against double-precision matmuls within bounds derived from its
// roundings, and every kernel variant this CPU runs bit-identical to the reference on odd
// shapes, both activation modes and strided operands, without writing outside its output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cpu/int8_kernels.h"
#include "runtime/threads.h"

namespace fsq {
namespace {

using cpu::ActQuant;
using cpu::CpuIsa;
using cpu::Int8Kernel;
using cpu::KernelStatus;

constexpr int kCodeMax = 127;
constexpr double kUnitRoundoff = 0x1p-24;  // float, round to nearest
constexpr int64_t kXPadding = 5;           // x row stride = cols + this (NaN-filled) gap
constexpr int64_t kYPadding = 3;           // y row stride = rows + this (canary-filled) gap
constexpr int64_t kPreparedAlign = 64;

const Int8Kernel kAllKernels[] = {Int8Kernel::Scalar, Int8Kernel::Avx2, Int8Kernel::Avx512Bw,
                                  Int8Kernel::Avx512Vnni};
const CpuIsa kAllIsas[] = {CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx512};
const ActQuant kModes[] = {ActQuant::PerToken, ActQuant::PerTensor};

const char* mode_name(ActQuant mode) { return mode == ActQuant::PerToken ? "per-token" : "per-tensor"; }

// The variants this CPU runs; the others are named once, so a skipped one is visible.
std::vector<Int8Kernel> supported_kernels() {
  std::vector<Int8Kernel> out;
  for (Int8Kernel k : kAllKernels) {
    if (cpu::int8_kernel_supported(k))
      out.push_back(k);
    else
      std::printf("[  NOTE    ] int8 kernel %s: not supported by this CPU, skipped\n", cpu::int8_kernel_name(k));
  }
  return out;
}

// An int8 weight matrix, its scales, and its prepared form.
struct Weights {
  int64_t rows, cols;
  std::vector<int8_t> q;
  std::vector<float> scales;
  std::vector<std::byte> buffer;
  cpu::Int8PreparedView prepared;

  Weights(int64_t r, int64_t c, std::vector<int8_t> codes, std::vector<float> s)
      : rows(r), cols(c), q(std::move(codes)), scales(std::move(s)) {
    buffer.resize(static_cast<size_t>(cpu::int8_prepared_bytes(rows, cols) + kPreparedAlign));
    const auto misalignment = reinterpret_cast<uintptr_t>(buffer.data()) % kPreparedAlign;
    std::byte* out = buffer.data() + (kPreparedAlign - misalignment) % kPreparedAlign;
    EXPECT_EQ(cpu::int8_prepare_weights(view(), out, &prepared), KernelStatus::Ok);
  }
  cpu::Int8WeightsView view() const { return {q.data(), scales.data(), rows, cols}; }
};

// Codes uniform in [-127, 127] (the extremes included), scales in [0.001, 0.1].
Weights random_weights(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> code(-kCodeMax, kCodeMax);
  std::uniform_real_distribution<float> scale(0.001f, 0.1f);
  std::vector<int8_t> q(static_cast<size_t>(rows * cols));
  for (int8_t& c : q) c = static_cast<int8_t>(code(rng));
  std::vector<float> s(static_cast<size_t>(rows));
  for (float& v : s) v = scale(rng);
  return Weights(rows, cols, std::move(q), std::move(s));
}

// x [m, stride] ~ N(0.3, 1) with a few outliers, NaN past `cols` (read by a kernel, it
// would poison the output); row 0 all zeros when zero_row.
std::vector<float> activations(int64_t m, int64_t cols, int64_t stride, uint32_t seed, bool zero_row) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.3f, 1.0f);
  std::uniform_int_distribution<int> outlier(0, 31);
  std::vector<float> x(static_cast<size_t>(m * stride), std::nanf(""));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t k = 0; k < cols; ++k)
      x[static_cast<size_t>(i * stride + k)] = zero_row && i == 0 ? 0.0f : normal(rng) * (outlier(rng) == 0 ? 20.0f : 1.0f);
  return x;
}

// A static scale that clamps the largest activations (exercising the clamp at +-127).
float clamping_scale(const std::vector<float>& x) {
  float amax = 0.0f;
  for (float v : x)
    if (std::isfinite(v)) amax = std::fmax(amax, std::fabs(v));
  constexpr float kClampedFraction = 0.5f;  // codes of |x| > this * amax clamp
  return amax * kClampedFraction / kCodeMax;
}

// An output matrix [rows, cols] with row stride `stride` inside guard elements; every
// element that is not an output holds a canary bit pattern.
template <typename T>
class Guarded {
 public:
  static constexpr int64_t kGuard = 64;
  static constexpr uint32_t kCanaryBits = 0x7fc0dead;  // a NaN no kernel produces

  Guarded(int64_t rows, int64_t cols, int64_t stride)
      : rows_(rows), cols_(cols), stride_(stride), buf_(static_cast<size_t>(rows * stride + 2 * kGuard)) {
    static_assert(sizeof(T) == sizeof kCanaryBits);
    for (T& v : buf_) std::memcpy(&v, &kCanaryBits, sizeof v);
  }
  T* data() { return buf_.data() + kGuard; }
  int64_t stride() const { return stride_; }
  std::vector<T> dense() const {
    std::vector<T> out;
    for (int64_t r = 0; r < rows_; ++r)
      for (int64_t c = 0; c < cols_; ++c) out.push_back(buf_[static_cast<size_t>(kGuard + r * stride_ + c)]);
    return out;
  }
  ::testing::AssertionResult guards_intact() const {
    for (size_t j = 0; j < buf_.size(); ++j) {
      const int64_t off = static_cast<int64_t>(j) - kGuard;
      const bool output = off >= 0 && off < rows_ * stride_ && off % stride_ < cols_;
      uint32_t bits = 0;
      std::memcpy(&bits, &buf_[j], sizeof bits);
      if (!output && bits != kCanaryBits) return ::testing::AssertionFailure() << "stray write at offset " << off;
    }
    return ::testing::AssertionSuccess();
  }

 private:
  int64_t rows_, cols_, stride_;
  std::vector<T> buf_;
};

template <typename T>
::testing::AssertionResult same_bits(const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  if (std::memcmp(got.data(), want.data(), got.size() * sizeof(T)) == 0) return ::testing::AssertionSuccess();
  for (size_t j = 0; j < got.size(); ++j)
    if (std::memcmp(&got[j], &want[j], sizeof(T)) != 0)
      return ::testing::AssertionFailure() << "element " << j << ": " << got[j] << " != " << want[j];
  return ::testing::AssertionFailure();
}

std::vector<float> reference(const Weights& w, const std::vector<float>& x, int64_t m, int64_t x_stride,
                             ActQuant mode, float scale) {
  std::vector<float> y(static_cast<size_t>(m * w.rows));
  EXPECT_EQ(cpu::int8_linear_reference(w.view(), x.data(), m, x_stride, mode, scale, y.data(), w.rows),
            KernelStatus::Ok);
  return y;
}

// ---- the reference on hand-computed values ----

// W [3 x 4]: a plain row, one with zeros and signs, an all-zero row.
Weights tiny_weights() {
  return Weights(3, 4, {1, 2, 3, 4, -1, 0, 1, 0, 0, 0, 0, 0}, {0.5f, 2.0f, 1.0f});
}

TEST(Int8Reference, PerTensorRoundsHalfToEvenAndClamps) {
  // scale 0.5: x * 2. Row 0: 0.5 -> 0, 1.5 -> 2, -0.5 -> 0, 200 -> 127 (clamped).
  // Row 1: 2.5 -> 2, -1.5 -> -2, -600 -> -127 (clamped), 0 -> 0. Row 2: zeros.
  const Weights w = tiny_weights();
  const std::vector<float> x = {0.25f, 0.75f, -0.25f, 100.0f, 1.25f, -0.75f, -300.0f, 0.0f, 0, 0, 0, 0};
  const float s = 0.5f;
  // acc = [512, 0, 0], [-383, -129, 0], [0, 0, 0]; y = acc * (0.5 * ws[n]).
  const std::vector<float> want = {128.0f, 0.0f, 0.0f, -95.75f, -129.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  EXPECT_EQ(reference(w, x, 3, 4, ActQuant::PerTensor, s), want);

  std::vector<int8_t> q(12);
  std::vector<float> xs(3);
  ASSERT_EQ(cpu::quantize_activations_int8(x.data(), 3, 4, 4, ActQuant::PerTensor, s, q.data(), 4, xs.data(),
                                           CpuIsa::Scalar),
            KernelStatus::Ok);
  EXPECT_EQ(q, (std::vector<int8_t>{0, 2, 0, 127, 2, -2, -127, 0, 0, 0, 0, 0}));
  EXPECT_EQ(xs, (std::vector<float>{s, s, s}));
}

TEST(Int8Reference, PerTokenScalesByAbsmaxAndZeroRowsGiveZeros) {
  // Row 0: amax 254, xs 2, inv 0.5: 0.5 -> 0, -1.5 -> -2, 2.5 -> 2, 127. Row 1: zeros.
  const Weights w = tiny_weights();
  const std::vector<float> x = {1.0f, -3.0f, 5.0f, 254.0f, 0.0f, -0.0f, 0.0f, 0.0f};
  // acc row 0 = [510, 2, 0]; y = acc * (2 * ws[n]).
  const std::vector<float> want = {510.0f, 8.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  EXPECT_EQ(reference(w, x, 2, 4, ActQuant::PerToken, 0.0f), want);

  std::vector<int8_t> q(8, 99);
  std::vector<float> xs(2, -1.0f);
  ASSERT_EQ(cpu::quantize_activations_int8(x.data(), 2, 4, 4, ActQuant::PerToken, 0.0f, q.data(), 4, xs.data(),
                                           CpuIsa::Scalar),
            KernelStatus::Ok);
  EXPECT_EQ(q, (std::vector<int8_t>{0, -2, 2, 127, 0, 0, 0, 0}));
  EXPECT_EQ(xs, (std::vector<float>{2.0f, 0.0f}));
}

// ---- the reference against double-precision matmuls ----

struct Quantized {
  std::vector<int8_t> q;   // [m, cols]
  std::vector<float> xs;   // [m]
};
Quantized quantize(const std::vector<float>& x, int64_t m, int64_t cols, int64_t stride, ActQuant mode, float s) {
  Quantized out{std::vector<int8_t>(static_cast<size_t>(m * cols)), std::vector<float>(static_cast<size_t>(m))};
  EXPECT_EQ(cpu::quantize_activations_int8(x.data(), m, cols, stride, mode, s, out.q.data(), cols, out.xs.data(),
                                           CpuIsa::Scalar),
            KernelStatus::Ok);
  return out;
}

TEST(Int8Reference, IsTheDequantizedProductUpToThreeFloatRoundings) {
  // y = fl(fl(acc) * fl(xs * ws)) with acc exact: within 3 roundings of acc * xs * ws.
  const int64_t rows = 29, cols = 1000, m = 5, stride = cols + kXPadding;
  const Weights w = random_weights(rows, cols, 3);
  const std::vector<float> x = activations(m, cols, stride, 4, true);
  for (ActQuant mode : kModes) {
    SCOPED_TRACE(mode_name(mode));
    const float s = clamping_scale(x);
    const std::vector<float> y = reference(w, x, m, stride, mode, s);
    const Quantized a = quantize(x, m, cols, stride, mode, s);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t n = 0; n < rows; ++n) {
        int64_t acc = 0;
        for (int64_t k = 0; k < cols; ++k) acc += int64_t{a.q[i * cols + k]} * w.q[n * cols + k];
        const double exact = static_cast<double>(acc) * a.xs[i] * w.scales[n];
        const double bound = 3.0 * kUnitRoundoff * std::fabs(exact) * (1.0 + 3.0 * kUnitRoundoff);
        ASSERT_LE(std::fabs(y[i * rows + n] - exact), bound) << "output " << i << ", " << n;
      }
  }
}

TEST(Int8Reference, ApproximatesTheFloatLinearWithinItsRoundingBound) {
  // Against y* = sum_k x[k] w'[k], w' = wq * ws the dequantized weights (exact in double):
  // each code is within 1/2 of x * inv, so xq * xs is within xs / 2 of x, up to the float
  // roundings of inv, xs and x * inv (3u |x|); the epilogue adds 3u |acc xs ws|
  // <= 3u sum |w'| (|x| + xs / 2). So |y - y*| <= sum_k |w'| (xs / 2 (1 + 3u) + 6u |x|),
  // given no code was clamped: per token never, per tensor with s = amax / 127 only by a
  // rounding of x * inv past 127, itself within the bound.
  constexpr double kSlack = 1.0 + 1e-6;  // the bound's own second-order terms
  const int64_t rows = 37, cols = 4096, m = 4, stride = cols + kXPadding;
  const Weights w = random_weights(rows, cols, 5);
  const std::vector<float> x = activations(m, cols, stride, 6, false);
  float amax = 0.0f;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t k = 0; k < cols; ++k) amax = std::fmax(amax, std::fabs(x[i * stride + k]));
  const double u = kUnitRoundoff;
  for (ActQuant mode : kModes) {
    SCOPED_TRACE(mode_name(mode));
    const float s = amax / kCodeMax;
    const std::vector<float> y = reference(w, x, m, stride, mode, s);
    const Quantized a = quantize(x, m, cols, stride, mode, s);
    double worst = 0.0;  // largest error / bound: printed to show the bound is not vacuous
    for (int64_t i = 0; i < m; ++i)
      for (int64_t n = 0; n < rows; ++n) {
        double want = 0.0, bound = 0.0;
        for (int64_t k = 0; k < cols; ++k) {
          const double wd = static_cast<double>(w.q[n * cols + k]) * w.scales[n];
          const double xk = x[i * stride + k];
          want += xk * wd;
          bound += std::fabs(wd) * (a.xs[i] / 2.0 * (1.0 + 3.0 * u) + 6.0 * u * std::fabs(xk));
        }
        bound *= kSlack;
        const double err = std::fabs(y[i * rows + n] - want);
        ASSERT_LE(err, bound) << "output " << i << ", " << n;
        worst = std::max(worst, err / bound);
      }
    std::printf("[  INFO    ] %s: largest |W8A8 - float| / bound = %.3f\n", mode_name(mode), worst);
  }
}

// ---- every kernel variant against the reference ----

struct Shape {
  int64_t rows, cols;
};
const Shape kShapes[] = {{1, 1}, {3, 37}, {17, 129}, {33, 575}, {64, 64}};
const int64_t kBatchRows[] = {1, 2, 3, 7, 8, 9, 31, 64};

TEST(Int8Kernels, QuantizeActivationsMatchesScalarOnEveryIsa) {
  for (const int64_t cols : {1, 7, 8, 15, 16, 17, 37, 129, 575}) {
    const int64_t m = 4, stride = cols + kXPadding, q_stride = cols + kXPadding;
    const std::vector<float> x = activations(m, cols, stride, 8, true);
    for (ActQuant mode : kModes) {
      const float s = clamping_scale(x);
      const Quantized want = quantize(x, m, cols, stride, mode, s);
      for (CpuIsa isa : kAllIsas) {
        if (!cpu::cpu_supports(isa)) continue;
        SCOPED_TRACE(std::string(cpu::cpu_isa_name(isa)) + " " + mode_name(mode) + " cols=" + std::to_string(cols));
        Guarded<float> xs(m, 1, 1);
        constexpr int8_t kCanary = 0x55;
        std::vector<int8_t> q(static_cast<size_t>(m * q_stride), kCanary);
        ASSERT_EQ(cpu::quantize_activations_int8(x.data(), m, cols, stride, mode, s, q.data(), q_stride, xs.data(), isa),
                  KernelStatus::Ok);
        for (int64_t i = 0; i < m; ++i) {
          ASSERT_EQ(0, std::memcmp(&q[i * q_stride], &want.q[i * cols], static_cast<size_t>(cols))) << "row " << i;
          for (int64_t k = cols; k < q_stride; ++k) ASSERT_EQ(q[i * q_stride + k], kCanary) << "row " << i;
        }
        ASSERT_TRUE(same_bits(xs.dense(), want.xs));
        ASSERT_TRUE(xs.guards_intact());
      }
    }
  }
}

TEST(Int8Kernels, SubnormalAbsmaxGivesTheSameCodesOnEveryIsa) {
  // 127 / amax overflows to inf: nonzero x clamp to +-127, zeros (0 * inf = NaN) to -127.
  constexpr float kTiny = 1e-39f;  // subnormal
  const int64_t cols = 37;
  std::vector<float> x(static_cast<size_t>(cols), 0.0f);
  x[1] = kTiny;
  x[cols - 1] = -kTiny;
  const Quantized want = quantize(x, 1, cols, cols, ActQuant::PerToken, 0.0f);
  EXPECT_EQ(want.q[0], -kCodeMax);
  EXPECT_EQ(want.q[1], kCodeMax);
  EXPECT_EQ(want.q[cols - 1], -kCodeMax);
  for (CpuIsa isa : kAllIsas) {
    if (!cpu::cpu_supports(isa)) continue;
    SCOPED_TRACE(cpu::cpu_isa_name(isa));
    std::vector<int8_t> q(static_cast<size_t>(cols));
    float xs = 0.0f;
    ASSERT_EQ(cpu::quantize_activations_int8(x.data(), 1, cols, cols, ActQuant::PerToken, 0.0f, q.data(), cols, &xs, isa),
              KernelStatus::Ok);
    EXPECT_EQ(q, want.q);
    EXPECT_EQ(xs, want.xs[0]);
  }
  const Weights w = random_weights(5, cols, 91);
  const std::vector<float> y_want = reference(w, x, 1, cols, ActQuant::PerToken, 0.0f);
  for (Int8Kernel kernel : supported_kernels()) {
    SCOPED_TRACE(cpu::int8_kernel_name(kernel));
    std::vector<float> y(static_cast<size_t>(w.rows));
    ASSERT_EQ(cpu::int8_linear_with(w.prepared, x.data(), 1, cols, ActQuant::PerToken, 0.0f, y.data(), w.rows, kernel),
              KernelStatus::Ok);
    EXPECT_TRUE(same_bits(y, y_want));
  }
}

// Runs int8_linear_with on `kernel` and checks it against the reference bit for bit.
void expect_linear_matches(const Weights& w, int64_t m, Int8Kernel kernel, ActQuant mode, uint32_t seed) {
  const int64_t x_stride = w.cols + kXPadding;
  const std::vector<float> x = activations(m, w.cols, x_stride, seed, m > 1);
  const float s = clamping_scale(x);
  const std::vector<float> want = reference(w, x, m, x_stride, mode, s);
  Guarded<float> y(m, w.rows, w.rows + kYPadding);
  ASSERT_EQ(cpu::int8_linear_with(w.prepared, x.data(), m, x_stride, mode, s, y.data(), y.stride(), kernel),
            KernelStatus::Ok);
  ASSERT_TRUE(same_bits(y.dense(), want));
  ASSERT_TRUE(y.guards_intact());
}

TEST(Int8Kernels, LinearIsBitIdenticalToReferenceOnEveryKernel) {
  const std::vector<Int8Kernel> kernels = supported_kernels();
  uint32_t seed = 100;
  for (const Shape& shape : kShapes) {
    const Weights w = random_weights(shape.rows, shape.cols, seed++);
    for (int64_t m : kBatchRows)
      for (ActQuant mode : kModes)
        for (Int8Kernel kernel : kernels) {
          SCOPED_TRACE(std::string(cpu::int8_kernel_name(kernel)) + " " + mode_name(mode) + " [" +
                       std::to_string(shape.rows) + " x " + std::to_string(shape.cols) + "] m=" + std::to_string(m));
          expect_linear_matches(w, m, kernel, mode, seed);
        }
  }
}

TEST(Int8Kernels, LinearIsBitIdenticalOnManyPanelsAndRowChunksOnAnyThreadCount) {
  // Several 64-row panels and 96-row chunks of x, large enough to run in parallel.
  const Weights w = random_weights(200, 300, 41);
  const int default_threads = set_threads(0);
  for (int threads : {1, 2, 3}) {
    set_threads(threads);
    for (int64_t m : {100, 200})
      for (Int8Kernel kernel : supported_kernels()) {
        SCOPED_TRACE(std::string(cpu::int8_kernel_name(kernel)) + " m=" + std::to_string(m) + " threads=" +
                     std::to_string(threads));
        expect_linear_matches(w, m, kernel, ActQuant::PerToken, 43);
      }
  }
  set_threads(default_threads);
}

TEST(Int8Kernels, LinearByIsaRunsThatIsasKernel) {
  const Weights w = random_weights(33, 575, 51);
  for (CpuIsa isa : kAllIsas) {
    if (!cpu::cpu_supports(isa)) continue;
    SCOPED_TRACE(cpu::cpu_isa_name(isa));
    const int64_t m = 3, x_stride = w.cols;
    const std::vector<float> x = activations(m, w.cols, x_stride, 52, false);
    std::vector<float> y(static_cast<size_t>(m * w.rows));
    ASSERT_EQ(cpu::int8_linear(w.prepared, x.data(), m, x_stride, ActQuant::PerToken, 0.0f, y.data(), w.rows, isa),
              KernelStatus::Ok);
    EXPECT_TRUE(same_bits(y, reference(w, x, m, x_stride, ActQuant::PerToken, 0.0f)));
  }
  EXPECT_EQ(cpu::int8_kernel_for(CpuIsa::Avx512),
            cpu::cpu_has_avx512_vnni() ? Int8Kernel::Avx512Vnni : Int8Kernel::Avx512Bw);
}

TEST(Int8Kernels, GemmInt32EqualsItsReferenceOnEveryKernel) {
  const std::vector<Int8Kernel> kernels = supported_kernels();
  std::mt19937 rng(61);
  std::uniform_int_distribution<int> code(-kCodeMax, kCodeMax);
  uint32_t seed = 200;
  for (const Shape& shape : kShapes) {
    const Weights w = random_weights(shape.rows, shape.cols, seed++);
    for (int64_t m : kBatchRows) {
      const int64_t xq_stride = shape.cols + kXPadding;
      constexpr int8_t kGap = -128;  // a code never allowed: reading the gap would show
      std::vector<int8_t> xq(static_cast<size_t>(m * xq_stride), kGap);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t k = 0; k < shape.cols; ++k) xq[i * xq_stride + k] = static_cast<int8_t>(i == 0 ? kCodeMax : code(rng));
      std::vector<int32_t> want(static_cast<size_t>(m * shape.rows));
      ASSERT_EQ(cpu::int8_gemm_int32_reference(w.view(), xq.data(), m, xq_stride, want.data(), shape.rows),
                KernelStatus::Ok);
      for (Int8Kernel kernel : kernels) {
        SCOPED_TRACE(std::string(cpu::int8_kernel_name(kernel)) + " [" + std::to_string(shape.rows) + " x " +
                     std::to_string(shape.cols) + "] m=" + std::to_string(m));
        Guarded<int32_t> acc(m, shape.rows, shape.rows + kYPadding);
        ASSERT_EQ(cpu::int8_gemm_int32_with(w.prepared, xq.data(), m, xq_stride, acc.data(), acc.stride(), kernel),
                  KernelStatus::Ok);
        ASSERT_TRUE(same_bits(acc.dense(), want));
        ASSERT_TRUE(acc.guards_intact());
      }
    }
  }
}

TEST(Int8Kernels, RejectInvalidArguments) {
  const Weights w = random_weights(4, 8, 71);
  const std::vector<float> x(16, 1.0f);
  std::vector<float> y(8);
  std::vector<int8_t> q(16);
  std::vector<int32_t> acc(8);
  std::vector<float> xs(2);
  const CpuIsa isa = cpu::best_cpu_isa();
  const auto linear = [&](const cpu::Int8PreparedView& v, const float* px, int64_t m, int64_t xst, ActQuant mode,
                          float s, float* py, int64_t yst) {
    return cpu::int8_linear(v, px, m, xst, mode, s, py, yst, isa);
  };
  const ActQuant tok = ActQuant::PerToken, ten = ActQuant::PerTensor;
  EXPECT_EQ(linear(w.prepared, x.data(), 2, 8, tok, 0.0f, y.data(), 4), KernelStatus::Ok);
  EXPECT_EQ(linear(w.prepared, x.data(), 2, 8, ten, 0.5f, y.data(), 4), KernelStatus::Ok);
  EXPECT_EQ(linear(w.prepared, nullptr, 2, 8, tok, 0.0f, y.data(), 4), KernelStatus::InvalidArgument);
  EXPECT_EQ(linear(w.prepared, x.data(), 2, 8, tok, 0.0f, nullptr, 4), KernelStatus::InvalidArgument);
  EXPECT_EQ(linear(w.prepared, x.data(), 0, 8, tok, 0.0f, y.data(), 4), KernelStatus::InvalidArgument);
  EXPECT_EQ(linear(w.prepared, x.data(), -1, 8, tok, 0.0f, y.data(), 4), KernelStatus::InvalidArgument);
  EXPECT_EQ(linear(w.prepared, x.data(), 2, 7, tok, 0.0f, y.data(), 4), KernelStatus::InvalidArgument);
  EXPECT_EQ(linear(w.prepared, x.data(), 2, 8, tok, 0.0f, y.data(), 3), KernelStatus::InvalidArgument);
  for (float bad : {0.0f, -1.0f, std::numeric_limits<float>::infinity(), std::nanf("")}) {
    EXPECT_EQ(linear(w.prepared, x.data(), 2, 8, ten, bad, y.data(), 4), KernelStatus::InvalidArgument) << bad;
    EXPECT_EQ(cpu::int8_linear_reference(w.view(), x.data(), 2, 8, ten, bad, y.data(), 4),
              KernelStatus::InvalidArgument);
    EXPECT_EQ(cpu::quantize_activations_int8(x.data(), 2, 8, 8, ten, bad, q.data(), 8, xs.data(), isa),
              KernelStatus::InvalidArgument);
  }
  cpu::Int8PreparedView bad = w.prepared;
  bad.data = nullptr;
  EXPECT_EQ(linear(bad, x.data(), 2, 8, tok, 0.0f, y.data(), 4), KernelStatus::InvalidArgument);
  bad = w.prepared;
  bad.scales = nullptr;
  EXPECT_EQ(linear(bad, x.data(), 2, 8, tok, 0.0f, y.data(), 4), KernelStatus::InvalidArgument);
  bad = w.prepared;
  bad.rows = 0;
  EXPECT_EQ(linear(bad, x.data(), 2, 8, tok, 0.0f, y.data(), 4), KernelStatus::InvalidArgument);
  bad = w.prepared;
  bad.cols = -8;
  EXPECT_EQ(linear(bad, x.data(), 2, 8, tok, 0.0f, y.data(), 4), KernelStatus::InvalidArgument);

  EXPECT_EQ(cpu::int8_gemm_int32(w.prepared, q.data(), 2, 8, acc.data(), 4, isa), KernelStatus::Ok);
  EXPECT_EQ(cpu::int8_gemm_int32(w.prepared, nullptr, 2, 8, acc.data(), 4, isa), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::int8_gemm_int32(w.prepared, q.data(), 2, 8, nullptr, 4, isa), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::int8_gemm_int32(w.prepared, q.data(), 2, 7, acc.data(), 4, isa), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::int8_gemm_int32(w.prepared, q.data(), 2, 8, acc.data(), 3, isa), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::int8_gemm_int32(w.prepared, q.data(), 0, 8, acc.data(), 4, isa), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::int8_gemm_int32_reference(w.view(), q.data(), 2, 7, acc.data(), 4), KernelStatus::InvalidArgument);

  EXPECT_EQ(cpu::quantize_activations_int8(x.data(), 2, 8, 8, tok, 0.0f, q.data(), 8, xs.data(), isa), KernelStatus::Ok);
  EXPECT_EQ(cpu::quantize_activations_int8(x.data(), 2, 8, 8, tok, 0.0f, q.data(), 7, xs.data(), isa),
            KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::quantize_activations_int8(x.data(), 2, 8, 8, tok, 0.0f, q.data(), 8, nullptr, isa),
            KernelStatus::InvalidArgument);

  cpu::Int8WeightsView no_scales = w.view();
  no_scales.scales = nullptr;
  EXPECT_EQ(cpu::check_int8_view(w.view()), KernelStatus::Ok);
  EXPECT_EQ(cpu::check_int8_view(no_scales), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::int8_linear_reference(no_scales, x.data(), 2, 8, tok, 0.0f, y.data(), 4), KernelStatus::InvalidArgument);
  // int8_prepare_weights wants a 64-byte aligned buffer.
  std::vector<std::byte> buffer(static_cast<size_t>(cpu::int8_prepared_bytes(4, 8) + kPreparedAlign + 1));
  const auto misalignment = reinterpret_cast<uintptr_t>(buffer.data()) % kPreparedAlign;
  std::byte* aligned = buffer.data() + (kPreparedAlign - misalignment) % kPreparedAlign;
  cpu::Int8PreparedView prepared;
  EXPECT_EQ(cpu::int8_prepare_weights(w.view(), aligned, &prepared), KernelStatus::Ok);
  EXPECT_EQ(cpu::int8_prepare_weights(w.view(), aligned + 1, &prepared), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::int8_prepare_weights(no_scales, aligned, &prepared), KernelStatus::InvalidArgument);
  EXPECT_EQ(cpu::int8_prepare_weights(w.view(), aligned, nullptr), KernelStatus::InvalidArgument);
}

TEST(Int8Kernels, UnsupportedKernelsAreReported) {
  const Weights w = random_weights(4, 8, 81);
  const std::vector<float> x(8, 1.0f);
  std::vector<float> y(4);
  for (Int8Kernel kernel : kAllKernels) {
    if (cpu::int8_kernel_supported(kernel)) continue;
    EXPECT_EQ(cpu::int8_linear_with(w.prepared, x.data(), 1, 8, ActQuant::PerToken, 0.0f, y.data(), 4, kernel),
              KernelStatus::IsaUnavailable);
  }
  for (CpuIsa isa : kAllIsas) {
    if (cpu::cpu_supports(isa)) continue;
    EXPECT_EQ(cpu::int8_linear(w.prepared, x.data(), 1, 8, ActQuant::PerToken, 0.0f, y.data(), 4, isa),
              KernelStatus::IsaUnavailable);
  }
}

}  // namespace
}  // namespace fsq
