// The CUDA quantized GEMVs against the CPU scalar references (cpu::uniform_matmul_reference,
// cpu::lut_matmul_reference), in the style of llama.cpp's test-backend-ops: every quant type
// and width, fp16 and bf16 activations, odd shapes (K = 4096 + 64; N = 1, 7, 4099; batch
// 1..16), guard sentinels around and between the output rows, no NaN/Inf. Skipped where no
// GPU is visible (CI); the argument checks run everywhere. The 4-bit type takes the
// tensor-core kernel where its shape allows (sm_80+); run the suite again with
// FSQ_CUDA_W4_MMA=0 to test the SIMT kernel on the same shapes (scripts/cuda-device-check.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/half.h"
#include "runtime/cpu/lut_kernels.h"
#include "runtime/cpu/uniform_kernels.h"
#include "runtime/cuda/cuda_backend.h"
#include "runtime/cuda/quant_gemv.h"

namespace fsq {
namespace {

using cuda::ActType;

// The bound on normalized mean squared error for matmuls.
constexpr double kMaxNmse = 5e-4;
// Per element, the kernels differ from the double-precision reference by the float sums
// (at most (K + 2) * 2^-23 of sum_k |x_k w_k|, a worst-case bound that also holds where the
// tensor cores truncate instead of rounding) and one rounding to the output type (half an
// ulp: 2^-11 relative for fp16, 2^-8 for bf16). The weights themselves are exact: the
// kernels multiply x by q - z (or the fp16 centroid) and apply the fp16 scale in fp32.
constexpr double kF32Unit = 1.0 / (1 << 23);
double output_unit(ActType act) { return act == ActType::F16 ? 1.0 / 2048 : 1.0 / 256; }
constexpr uint16_t kSentinel = 0x7e5a;  // a NaN payload no kernel writes

uint16_t to_act(float v, ActType act) { return act == ActType::F16 ? f32_to_f16(v) : f32_to_bf16(v); }
float from_act(uint16_t v, ActType act) { return act == ActType::F16 ? f16_to_f32(v) : bf16_to_f32(v); }

// Device memory holding a copy of a host vector; freed with the object.
class DeviceCopy {
 public:
  template <class T>
  explicit DeviceCopy(const std::vector<T>& host) : bytes_(host.size() * sizeof(T)) {
    if (bytes_ > 0) error_ = cuda::copy_to_device(&ptr_, host.data(), bytes_);
  }
  ~DeviceCopy() { cuda::free_device(ptr_); }
  DeviceCopy(const DeviceCopy&) = delete;
  DeviceCopy& operator=(const DeviceCopy&) = delete;
  template <class T>
  const T* as() const {
    return static_cast<const T*>(ptr_);
  }
  void* get() const { return ptr_; }
  const std::string& error() const { return error_; }
  template <class T>
  std::string read(std::vector<T>* host) const {
    return cuda::copy_to_host(host->data(), ptr_, host->size() * sizeof(T));
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  std::string error_;
};

// Row-major little-endian bit streams of `bits`-bit codes, as FORMAT.md packs them.
std::vector<uint32_t> pack_rows(const std::vector<uint32_t>& codes, int64_t rows, int64_t cols, int bits) {
  const int64_t words_per_row = (cols * bits + 31) / 32;
  std::vector<uint32_t> words(static_cast<size_t>(rows * words_per_row), 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < cols; ++k) {
      const int64_t bit = k * bits;
      const uint64_t code = codes[r * cols + k];
      uint32_t* row = words.data() + r * words_per_row;
      row[bit / 32] |= static_cast<uint32_t>(code << (bit % 32));
      if (bit % 32 + bits > 32) row[bit / 32 + 1] |= static_cast<uint32_t>(code >> (32 - bit % 32));
    }
  }
  return words;
}

std::vector<uint32_t> random_codes(int64_t rows, int64_t cols, int bits, std::mt19937& rng) {
  std::uniform_int_distribution<uint32_t> code(0, (1u << bits) - 1);
  std::vector<uint32_t> codes(static_cast<size_t>(rows * cols));
  for (uint32_t& c : codes) c = code(rng);
  return codes;
}

// Activations [m, x_stride] in the activation type, and the same values as floats for the
// reference (the reference multiplies exactly what the kernel reads).
struct Activations {
  std::vector<uint16_t> bits;
  std::vector<float> values;
  std::vector<double> abs_sum;  // per batch row: sum_k |x_k|, for the float-sum error bound
  int64_t stride = 0;
};

Activations random_activations(int64_t m, int64_t cols, ActType act, std::mt19937& rng) {
  Activations a;
  a.stride = (cols + 8 + 7) / 8 * 8;  // padded rows: a stride other than cols, still a multiple of 8
  a.bits.assign(static_cast<size_t>(m * a.stride), to_act(1000.f, act));  // padding a kernel must not read
  a.values.assign(a.bits.size(), 0.f);
  a.abs_sum.assign(static_cast<size_t>(m), 0.0);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t k = 0; k < cols; ++k) {
      const uint16_t v = to_act(normal(rng), act);
      a.bits[i * a.stride + k] = v;
      a.values[i * a.stride + k] = from_act(v, act);
      a.abs_sum[i] += std::abs(from_act(v, act));
    }
  }
  return a;
}

// y [m, y_stride] with sentinels in the gaps between rows and in guard zones on both sides.
struct GuardedOutput {
  static constexpr int64_t kGuard = 64;
  int64_t stride = 0, rows = 0, m = 0;
  std::vector<uint16_t> host;
  GuardedOutput(int64_t m_, int64_t rows_) : stride(rows_ + 3), rows(rows_), m(m_) {
    host.assign(static_cast<size_t>(2 * kGuard + m * stride), kSentinel);
  }
  uint16_t at(int64_t i, int64_t n) const { return host[kGuard + i * stride + n]; }
  // Every element outside y[i, 0..rows) still holds the sentinel.
  int64_t touched_outside() const {
    int64_t touched = 0;
    for (int64_t j = 0; j < static_cast<int64_t>(host.size()); ++j) {
      const int64_t in = j - kGuard;
      const bool inside = in >= 0 && in < m * stride && in % stride < rows;
      if (!inside && host[j] != kSentinel) ++touched;
    }
    return touched;
  }
};

// Compares the kernel's output with the reference: no NaN/Inf, every element within the
// arithmetic's bound, NMSE within kMaxNmse.
void expect_matches(const GuardedOutput& y, const std::vector<float>& ref, int64_t ref_stride,
                    const std::vector<double>& abs_bound, ActType act, int64_t cols) {
  double err2 = 0.0, ref2 = 0.0;
  int64_t bad = 0, non_finite = 0;
  for (int64_t i = 0; i < y.m; ++i) {
    const double sum_tolerance = (cols + 2) * kF32Unit * abs_bound[i];
    for (int64_t n = 0; n < y.rows; ++n) {
      const double got = from_act(y.at(i, n), act), want = ref[i * ref_stride + n];
      if (!std::isfinite(got)) {
        ++non_finite;
        continue;
      }
      const double tolerance = output_unit(act) * (std::abs(want) + sum_tolerance) + sum_tolerance;
      if (std::abs(got - want) > tolerance && ++bad <= 3)
        ADD_FAILURE() << "y[" << i << ", " << n << "] = " << got << ", reference " << want << " (tolerance "
                      << tolerance << ")";
      err2 += (got - want) * (got - want);
      ref2 += want * want;
    }
  }
  EXPECT_EQ(non_finite, 0);
  EXPECT_EQ(bad, 0);
  EXPECT_LE(err2 / std::max(ref2, 1e-30), kMaxNmse);
  EXPECT_EQ(y.touched_outside(), 0) << "wrote outside y[i, 0..rows)";
}

// ---------------------------------------------------------------- uniform types

struct UniformCase {
  int bits;
  int64_t group_cols;  // 0: per-channel (group = cols)
  bool asymmetric;
  ActType act;
  int64_t rows, cols, m;
};

std::string case_name(const testing::TestParamInfo<UniformCase>& info) {
  const UniformCase& c = info.param;
  std::string name = "w";
  name += std::to_string(c.bits);
  name += "g";
  name += c.group_cols ? std::to_string(c.group_cols) : std::string("ch");
  name += c.asymmetric ? "a_" : "s_";
  name += cuda::act_type_name(c.act);
  name += "_n" + std::to_string(c.rows) + "_k" + std::to_string(c.cols) + "_m" + std::to_string(c.m);
  return name;
}

struct UniformMatrix {
  std::vector<uint32_t> words;
  std::vector<uint16_t> scales;
  std::vector<uint8_t> zeros;
  cpu::UniformWeightsView view;  // host pointers
  float max_abs_weight = 0.f;
};

UniformMatrix random_uniform(const UniformCase& c, std::mt19937& rng) {
  UniformMatrix w;
  const int64_t group = c.group_cols ? c.group_cols : c.cols, groups = c.cols / group;
  w.words = pack_rows(random_codes(c.rows, c.cols, c.bits, rng), c.rows, c.cols, c.bits);
  std::uniform_real_distribution<float> scale(0.002f, 0.05f);
  std::uniform_int_distribution<int> zero(0, (1 << c.bits) - 1);
  for (int64_t i = 0; i < c.rows * groups; ++i) {
    w.scales.push_back(f32_to_f16(scale(rng)));
    if (c.asymmetric) w.zeros.push_back(static_cast<uint8_t>(zero(rng)));
  }
  float max_scale = 0.f;
  for (uint16_t s : w.scales) max_scale = std::max(max_scale, f16_to_f32(s));
  w.max_abs_weight = max_scale * static_cast<float>((1 << c.bits) - 1);
  w.view.words = w.words.data();
  w.view.rows = c.rows;
  w.view.cols = c.cols;
  w.view.words_per_row = (c.cols * c.bits + 31) / 32;
  w.view.bits = c.bits;
  w.view.group_cols = group;
  w.view.scales = w.scales.data();
  w.view.zeros = c.asymmetric ? w.zeros.data() : nullptr;
  return w;
}

class CudaUniformGemv : public testing::TestWithParam<UniformCase> {};

TEST_P(CudaUniformGemv, MatchesScalarReference) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no GPU: " << cuda::describe();
  const UniformCase& c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(c.bits * 1000 + c.rows + c.m));
  UniformMatrix w = random_uniform(c, rng);
  Activations x = random_activations(c.m, c.cols, c.act, rng);
  std::vector<float> ref(static_cast<size_t>(c.m * c.rows));
  ASSERT_EQ(cpu::uniform_matmul_reference(w.view, x.values.data(), c.m, x.stride, ref.data(), c.rows),
            cpu::KernelStatus::Ok);

  DeviceCopy words(w.words), scales(w.scales), zeros(w.zeros), xd(x.bits);
  GuardedOutput y(c.m, c.rows);
  DeviceCopy yd(y.host);
  ASSERT_EQ(words.error() + scales.error() + zeros.error() + xd.error() + yd.error(), "");
  cpu::UniformWeightsView dev = w.view;
  dev.words = words.as<uint32_t>();
  dev.scales = scales.as<uint16_t>();
  dev.zeros = c.asymmetric ? zeros.as<uint8_t>() : nullptr;
  uint16_t* y_rows = static_cast<uint16_t*>(yd.get()) + GuardedOutput::kGuard;
  ASSERT_EQ(cuda::uniform_gemv(dev, xd.get(), c.m, x.stride, y_rows, y.stride, c.act), "");
  ASSERT_EQ(cuda::synchronize(), "");
  ASSERT_EQ(yd.read(&y.host), "");
  std::vector<double> bound(x.abs_sum);
  for (double& b : bound) b *= w.max_abs_weight;
  expect_matches(y, ref, c.rows, bound, c.act, c.cols);

  // Same inputs, same bits: the sums run in a fixed order.
  std::vector<uint16_t> first = y.host;
  ASSERT_EQ(cuda::uniform_gemv(dev, xd.get(), c.m, x.stride, y_rows, y.stride, c.act), "");
  ASSERT_EQ(cuda::synchronize(), "");
  ASSERT_EQ(yd.read(&y.host), "");
  EXPECT_EQ(y.host, first);
}

std::vector<UniformCase> uniform_cases() {
  constexpr int64_t kOddK = 4096 + 64;
  std::vector<UniformCase> cases;
  for (ActType act : {ActType::F16, ActType::BF16}) {
    for (int bits : {2, 3, 4, 8}) {
      // The shapes: N = 4099 at a few batches, N = 1 and 7 at every batch tier.
      // (K = 4160 is 65 groups of 64; g128 runs on the 4096-wide rows.)
      for (int64_t m : {1, 3, 16}) cases.push_back({bits, 64, true, act, 4099, kOddK, m});
      cases.push_back({bits, 128, bits % 2 == 0, act, 130, 4096, 2});
      for (int64_t m : {1, 2, 5, 8, 9, 15}) cases.push_back({bits, 32, false, act, 7, kOddK, m});
      cases.push_back({bits, 64, true, act, 1, kOddK, 4});
      cases.push_back({bits, 0, bits != 8, act, 33, 96, 6});  // per-channel, short rows
      cases.push_back({bits, 0, true, act, 17, 192, 11});     // per-channel, 64-column multiple
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaUniformGemv, testing::ValuesIn(uniform_cases()), case_name);

// ---------------------------------------------------------------- LUT types

enum class Sparse { None, U16, I32 };

struct LutCase {
  int bits;
  Sparse sparse;
  ActType act;
  int64_t rows, cols, m;
};

std::string lut_case_name(const testing::TestParamInfo<LutCase>& info) {
  const LutCase& c = info.param;
  const char* sparse = c.sparse == Sparse::None ? "dense" : c.sparse == Sparse::U16 ? "csr16" : "csr32";
  return "lut" + std::to_string(c.bits) + "_" + sparse + "_" + cuda::act_type_name(c.act) + "_n" +
         std::to_string(c.rows) + "_k" + std::to_string(c.cols) + "_m" + std::to_string(c.m);
}

struct LutMatrix {
  std::vector<uint32_t> words;
  std::vector<uint16_t> lut, val, col16;
  std::vector<int32_t> row_ptr, col32;
  cpu::LutWeightsView view;  // host pointers
  float max_abs_weight = 0.f;
};

// Random codes and tables; with a CSR part, 0.45 % of each row's columns on average, one row
// with 100 nonzeros (more than a warp's lanes) and, when there are 3 rows or more, an empty one.
LutMatrix random_lut(const LutCase& c, std::mt19937& rng) {
  LutMatrix w;
  const int levels = 1 << c.bits;
  w.words = pack_rows(random_codes(c.rows, c.cols, c.bits, rng), c.rows, c.cols, c.bits);
  std::normal_distribution<float> centroid(0.f, 0.03f), outlier(0.f, 0.3f);
  float max_centroid = 0.f, max_val = 0.f;
  for (int64_t i = 0; i < c.rows * levels; ++i) {
    w.lut.push_back(f32_to_f16(centroid(rng)));
    max_centroid = std::max(max_centroid, std::abs(f16_to_f32(w.lut.back())));
  }
  w.view.words = w.words.data();
  w.view.rows = c.rows;
  w.view.cols = c.cols;
  w.view.words_per_row = (c.cols * c.bits + 31) / 32;
  w.view.bits = c.bits;
  w.view.lut = w.lut.data();
  if (c.sparse != Sparse::None) {
    std::bernoulli_distribution keep(0.0045);
    w.row_ptr.push_back(0);
    for (int64_t r = 0; r < c.rows; ++r) {
      const bool crowded = r == 1 % c.rows, empty = c.rows >= 3 && r == 2;
      for (int64_t k = 0; k < c.cols && !empty; ++k) {
        if (!(crowded ? k % (c.cols / 100) == 0 && k / (c.cols / 100) < 100 : keep(rng))) continue;
        w.val.push_back(f32_to_f16(outlier(rng)));
        max_val = std::max(max_val, std::abs(f16_to_f32(w.val.back())));
        w.col16.push_back(static_cast<uint16_t>(k));
        w.col32.push_back(static_cast<int32_t>(k));
      }
      w.row_ptr.push_back(static_cast<int32_t>(w.val.size()));
    }
    w.view.row_ptr = w.row_ptr.data();
    w.view.col_type = c.sparse == Sparse::U16 ? cpu::LutColType::U16 : cpu::LutColType::I32;
    w.view.col = c.sparse == Sparse::U16 ? static_cast<const void*>(w.col16.data()) : w.col32.data();
    w.view.val = w.val.data();
    w.view.nnz = static_cast<int64_t>(w.val.size());
  }
  w.max_abs_weight = max_centroid + max_val;
  return w;
}

class CudaLutGemv : public testing::TestWithParam<LutCase> {};

TEST_P(CudaLutGemv, MatchesScalarReference) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no GPU: " << cuda::describe();
  const LutCase& c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(c.bits * 7919 + c.rows + c.m));
  LutMatrix w = random_lut(c, rng);
  Activations x = random_activations(c.m, c.cols, c.act, rng);
  std::vector<float> ref(static_cast<size_t>(c.m * c.rows));
  ASSERT_EQ(cpu::lut_matmul_reference(w.view, x.values.data(), c.m, x.stride, ref.data(), c.rows),
            cpu::KernelStatus::Ok);

  DeviceCopy words(w.words), lut(w.lut), row_ptr(w.row_ptr), col16(w.col16), col32(w.col32), val(w.val);
  DeviceCopy xd(x.bits);
  GuardedOutput y(c.m, c.rows);
  DeviceCopy yd(y.host);
  ASSERT_EQ(words.error() + lut.error() + row_ptr.error() + col16.error() + col32.error() + val.error() + xd.error() +
                yd.error(),
            "");
  cpu::LutWeightsView dev = w.view;
  dev.words = words.as<uint32_t>();
  dev.lut = lut.as<uint16_t>();
  if (c.sparse != Sparse::None) {
    dev.row_ptr = row_ptr.as<int32_t>();
    dev.col = c.sparse == Sparse::U16 ? col16.get() : col32.get();
    dev.val = val.as<uint16_t>();
  }
  uint16_t* y_rows = static_cast<uint16_t*>(yd.get()) + GuardedOutput::kGuard;
  ASSERT_EQ(cuda::lut_gemv(dev, xd.get(), c.m, x.stride, y_rows, y.stride, c.act), "");
  ASSERT_EQ(cuda::synchronize(), "");
  ASSERT_EQ(yd.read(&y.host), "");
  std::vector<double> bound(x.abs_sum);
  for (double& b : bound) b *= w.max_abs_weight;
  expect_matches(y, ref, c.rows, bound, c.act, c.cols);
}

std::vector<LutCase> lut_cases() {
  constexpr int64_t kOddK = 4096 + 64;
  std::vector<LutCase> cases;
  for (ActType act : {ActType::F16, ActType::BF16}) {
    for (int bits : {3, 4}) {
      for (Sparse sparse : {Sparse::None, Sparse::U16, Sparse::I32}) {
        for (int64_t m : {1, 16}) cases.push_back({bits, sparse, act, 4099, kOddK, m});
        for (int64_t m : {2, 3, 7, 12}) cases.push_back({bits, sparse, act, 7, kOddK, m});
        cases.push_back({bits, sparse, act, 1, kOddK, 5});
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaLutGemv, testing::ValuesIn(lut_cases()), lut_case_name);

// ---------------------------------------------------------------- argument checks (no GPU needed)

TEST(CudaGemvChecks, RejectsWhatTheKernelsDoNotHandle) {
  std::vector<uint32_t> words(100 * 13);
  std::vector<uint16_t> scales(100 * 2);
  cpu::UniformWeightsView w;
  w.words = words.data();
  w.rows = 100;
  w.cols = 100;  // not a multiple of 32
  w.words_per_row = 13;
  w.bits = 4;
  w.group_cols = 50;
  w.scales = scales.data();
  std::string why;
  EXPECT_FALSE(cuda::uniform_gemv_can_implement(w, 1, &why));
  EXPECT_FALSE(why.empty());
  w.cols = 128;
  w.words_per_row = 16;
  w.group_cols = 128;
  words.resize(100 * 16);
  w.words = words.data();
  EXPECT_FALSE(cuda::uniform_gemv_can_implement(w, 0, nullptr));
  EXPECT_FALSE(cuda::uniform_gemv_can_implement(w, cuda::kMaxGemvBatch + 1, nullptr));
  EXPECT_EQ(cuda::uniform_gemv_can_implement(w, cuda::kMaxGemvBatch, nullptr), cuda::compiled());
  // A launch that cannot run says why and launches nothing.
  EXPECT_NE(cuda::uniform_gemv(w, nullptr, 17, 128, nullptr, 100, ActType::F16), "");

  std::vector<uint16_t> lut(100 * 16);
  cpu::LutWeightsView l;
  l.words = words.data();
  l.rows = 100;
  l.cols = 128;
  l.words_per_row = 16;
  l.bits = 4;
  l.lut = lut.data();
  EXPECT_EQ(cuda::lut_gemv_can_implement(l, 1, nullptr), cuda::compiled());
  l.bits = 5;
  EXPECT_FALSE(cuda::lut_gemv_can_implement(l, 1, nullptr));
  l.bits = 4;
  int32_t fake_row_ptr = 0;
  l.row_ptr = &fake_row_ptr;  // nnz > 0 without columns or values
  l.nnz = 5;
  EXPECT_FALSE(cuda::lut_gemv_can_implement(l, 1, nullptr));
}

}  // namespace
}  // namespace fsq
