// The CUDA decode-step ops (decode_ops.h): their host references on cases with known answers
// (these run everywhere, CI included), then each kernel against its reference on odd shapes
// with sentinels past every output (skipped where no GPU is visible).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include "random_packed.h"
#include "rope_tables.h"
#include "runtime/cpu/uniform_kernels.h"
#include "runtime/cuda/cuda_backend.h"
#include "runtime/cuda/decode_ops.h"
#include "runtime/cuda/dense_gemv.h"

namespace fsq {
namespace {

using cuda::ActType;
using cuda::AttentionShape;
using test::RandomUniform;

constexpr double kF32Epsilon = 0x1p-24;  // unit roundoff of f32
constexpr uint16_t kActSentinel = 0x7bcd;
constexpr float kF32Sentinel = -777.25f;

// One ulp of the act type at v (half an ulp each way: the kernel's f32 value and the
// reference's double value may round to neighbouring act values), with fp16's subnormal
// spacing as the floor.
double act_ulp(double v, ActType act) {
  return act == ActType::F16 ? std::abs(v) * 0x1p-10 + 0x1p-24 : std::abs(v) * 0x1p-7 + 0x1p-133;
}

std::vector<uint16_t> random_act(size_t n, float sigma, uint32_t seed, ActType act) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, sigma);
  std::vector<uint16_t> out(n);
  for (uint16_t& v : out) v = cuda::to_act_bits(normal(rng), act);
  return out;
}

std::vector<float> random_f32(size_t n, float sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, sigma);
  std::vector<float> out(n);
  for (float& v : out) v = normal(rng);
  return out;
}

// ---------------------------------------------------------------------------------------------
// References on known answers.

TEST(CudaDecodeOpsReference, EmbeddingRowsEqualTheSpecDequantization) {
  // The spec's matmul against one-hot rows of x gives w'[n, k] as y[k, n], exactly (one term).
  for (const auto& [bits, group_cols, asymmetric] : {std::tuple{3, 32, true}, std::tuple{8, 96, false}}) {
    const RandomUniform w(5, 96, bits, group_cols, asymmetric, 11);
    std::vector<float> identity(96 * 96, 0.f), columns(96 * 5);
    for (int64_t k = 0; k < 96; ++k) identity[k * 96 + k] = 1.f;
    ASSERT_EQ(cpu::uniform_matmul_reference(w.view, identity.data(), 96, 96, columns.data(), 5), cpu::KernelStatus::Ok);
    const std::vector<int32_t> ids = {4, 0, 2, -1};
    std::vector<float> h(4 * 96);
    cuda::embed_uniform_rows_reference(w.view, ids.data(), 4, h.data());
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t k = 0; k < 96; ++k) ASSERT_EQ(h[b * 96 + k], columns[k * 5 + ids[b]]) << bits << " bits, " << b << ", " << k;
    for (int64_t k = 0; k < 96; ++k) ASSERT_TRUE(std::isnan(h[3 * 96 + k])) << "an id out of range gives NaN";
  }
}

TEST(CudaDecodeOpsReference, RopeAtPositionZeroIsTheIdentityAndAQuarterTurnRotatesHalves) {
  const ActType act = ActType::F16;
  AttentionShape s;
  s.batch = 1, s.heads = 2, s.kv_heads = 1, s.head_dim = 4, s.capacity = 3;
  const int64_t stride = (s.heads + 2 * s.kv_heads) * s.head_dim;
  std::vector<uint16_t> qkv(stride);
  for (int64_t i = 0; i < stride; ++i) qkv[i] = cuda::to_act_bits(static_cast<float>(i + 1), act);
  const uint16_t* q = qkv.data();
  const uint16_t* k = q + s.heads * s.head_dim;
  const uint16_t* v = k + s.kv_heads * s.head_dim;
  // Position 0: angle 0. Position 1: cos 0, sin 1 (a quarter turn) on every pair.
  const std::vector<float> cos = {1, 1, 1, 1, 0, 0, 0, 0}, sin = {0, 0, 0, 0, 1, 1, 1, 1};
  std::vector<float> q_out(8), k_cache(12, kF32Sentinel), v_cache(12, kF32Sentinel);
  cuda::rope_append_reference(s, q, k, v, stride, act, cos.data(), sin.data(), 0, q_out.data(), k_cache.data(),
                              v_cache.data());
  EXPECT_EQ(q_out, (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(std::vector<float>(k_cache.begin(), k_cache.begin() + 4), (std::vector<float>{9, 10, 11, 12}));
  EXPECT_EQ(std::vector<float>(v_cache.begin(), v_cache.begin() + 4), (std::vector<float>{13, 14, 15, 16}));
  EXPECT_EQ(k_cache[4], kF32Sentinel);  // slot 1 untouched
  cuda::rope_append_reference(s, q, k, v, stride, act, cos.data(), sin.data(), 1, q_out.data(), k_cache.data(),
                              v_cache.data());
  // rotate_half: (x0, x1, x2, x3) -> (-x2, -x3, x0, x1) at a quarter turn.
  EXPECT_EQ(q_out, (std::vector<float>{-3, -4, 1, 2, -7, -8, 5, 6}));
  EXPECT_EQ(std::vector<float>(k_cache.begin() + 4, k_cache.begin() + 8), (std::vector<float>{-11, -12, 9, 10}));
  EXPECT_EQ(std::vector<float>(v_cache.begin() + 4, v_cache.begin() + 8), (std::vector<float>{13, 14, 15, 16}));
  EXPECT_EQ(k_cache[0], 9.f);  // slot 0 kept
  EXPECT_EQ(k_cache[8], kF32Sentinel);
}

TEST(CudaDecodeOpsReference, AttentionOverEqualKeysAveragesTheValuesAndGroupsQueryHeads) {
  const ActType act = ActType::BF16;
  AttentionShape s;
  s.batch = 1, s.heads = 2, s.kv_heads = 1, s.head_dim = 2, s.capacity = 4;
  const std::vector<float> q = {1, 0, 0, 1};
  // Keys 0..2 equal (so equal weights), values 2, 4, 6 and 10, 20, 30 per dimension.
  const std::vector<float> k_cache = {1, 1, 1, 1, 1, 1, 99, 99}, v_cache = {2, 10, 4, 20, 6, 30, 99, 99};
  std::vector<uint16_t> out(4);
  cuda::decode_attention_reference(s, q.data(), k_cache.data(), v_cache.data(), 2, 0.125f, out.data(), act);
  for (int h = 0; h < 2; ++h) {  // both query heads read the one KV head
    EXPECT_EQ(cuda::from_act_bits(out[h * 2], act), 4.f);
    EXPECT_EQ(cuda::from_act_bits(out[h * 2 + 1], act), 20.f);
  }
  // Only key 0: its value, whatever the logit.
  cuda::decode_attention_reference(s, q.data(), k_cache.data(), v_cache.data(), 0, 0.125f, out.data(), act);
  EXPECT_EQ(cuda::from_act_bits(out[0], act), 2.f);
  EXPECT_EQ(cuda::from_act_bits(out[1], act), 10.f);
}

TEST(CudaDecodeOpsReference, SiluMulAndNormMatchTheirFormulas) {
  const ActType act = ActType::F16;
  const std::vector<uint16_t> gate = {cuda::to_act_bits(0.f, act), cuda::to_act_bits(1.f, act), 0,
                                      cuda::to_act_bits(-2.f, act)};
  const std::vector<uint16_t> up = {cuda::to_act_bits(5.f, act), cuda::to_act_bits(2.f, act), 0,
                                    cuda::to_act_bits(3.f, act)};
  std::vector<uint16_t> out(2 * 2 + 1, kActSentinel);
  // rows 2, cols 2 of a stride-2 layout read gate/up [0, 1] and [2, 3].
  cuda::silu_mul_act_reference(gate.data(), up.data(), 2, 2, 2, out.data(), act);
  EXPECT_EQ(cuda::from_act_bits(out[0], act), 0.f);
  EXPECT_EQ(out[1], cuda::to_act_bits(static_cast<float>(2.0 / (1.0 + std::exp(-1.0))), act));
  EXPECT_EQ(out[3], cuda::to_act_bits(static_cast<float>(-2.0 / (1.0 + std::exp(2.0)) * 3.0), act));
  EXPECT_EQ(out[4], kActSentinel);

  const std::vector<float> x = {3, 4}, w = {1, 2};  // mean square 12.5
  std::vector<uint16_t> y(2);
  cuda::rms_norm_to_act_reference(x.data(), w.data(), 1, 2, 0.f, y.data(), act);
  EXPECT_EQ(y[0], cuda::to_act_bits(static_cast<float>(3 / std::sqrt(12.5)), act));
  EXPECT_EQ(y[1], cuda::to_act_bits(static_cast<float>(8 / std::sqrt(12.5)), act));
}

TEST(CudaDecodeOpsReference, AttentionShapesOutOfRangeAreNamed) {
  AttentionShape s;
  s.batch = 1, s.heads = 9, s.kv_heads = 3, s.head_dim = 64, s.capacity = 2048;
  EXPECT_EQ(cuda::attention_shape_problem(s), "");
  AttentionShape bad = s;
  bad.kv_heads = 2;
  EXPECT_NE(cuda::attention_shape_problem(bad).find("multiple of kv_heads"), std::string::npos);
  bad = s;
  bad.head_dim = 63;
  EXPECT_NE(cuda::attention_shape_problem(bad).find("even"), std::string::npos);
  bad = s;
  bad.capacity = cuda::kMaxAttentionCapacity + 1;
  EXPECT_NE(cuda::attention_shape_problem(bad).find("capacity"), std::string::npos);
  bad = s;
  bad.batch = 0;
  EXPECT_NE(cuda::attention_shape_problem(bad).find("positive"), std::string::npos);
}

TEST(CudaDecodeOps, LaunchersRefuseBadArgumentsWithoutADevice) {
  // Argument checks come before any launch, so they answer in CI too (or "not compiled").
  AttentionShape s;
  s.batch = 1, s.heads = 3, s.kv_heads = 2, s.head_dim = 64, s.capacity = 16;
  float f = 0;
  const int32_t pos = 0;
  EXPECT_NE(cuda::decode_attention(s, &f, &f, &f, &pos, 1.f, &f, ActType::F16), "");
  EXPECT_NE(cuda::rms_norm_to_act(nullptr, &f, 1, 1, 0.f, &f, ActType::F16), "");
  EXPECT_NE(cuda::add_act(&f, &f, 0, ActType::F16), "");
}

// ---------------------------------------------------------------------------------------------
// Kernels against the references (GPU only).

// A device buffer holding `host`, with `guard` sentinel elements after it.
template <class T>
struct DeviceBuffer {
  void* ptr = nullptr;
  size_t count = 0, guard = 0;
  DeviceBuffer(const std::vector<T>& host, size_t guard_count, T sentinel) : count(host.size()), guard(guard_count) {
    std::vector<T> padded(host);
    padded.resize(count + guard, sentinel);
    EXPECT_EQ(cuda::copy_to_device(&ptr, padded.data(), padded.size() * sizeof(T)), "");
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cuda::free_device(ptr); }
  T* get() const { return static_cast<T*>(ptr); }
  // The buffer's elements, then checks that every guard element still holds `sentinel`.
  std::vector<T> read(T sentinel) const {
    std::vector<T> all(count + guard);
    EXPECT_EQ(cuda::copy_to_host(all.data(), ptr, all.size() * sizeof(T)), "");
    for (size_t i = count; i < all.size(); ++i) EXPECT_EQ(all[i], sentinel) << "guard element " << i - count;
    all.resize(count);
    return all;
  }
};

constexpr size_t kGuard = 64;

#define SKIP_WITHOUT_GPU() \
  if (cuda::device_count() == 0) GTEST_SKIP() << "no GPU: " << cuda::describe()

class CudaDecodeOpsOnDevice : public ::testing::TestWithParam<ActType> {};

TEST(CudaDecodeOpsOnDeviceExact, EmbeddingRowsAreBitIdenticalToTheReference) {
  SKIP_WITHOUT_GPU();
  for (const auto& [bits, group_cols, asymmetric] : {std::tuple{3, 32, true}, std::tuple{8, 64, false},
                                                     std::tuple{4, 576, true}}) {
    const RandomUniform w(300, 576, bits, group_cols, asymmetric, 12);
    const std::vector<int32_t> ids = {299, 0, 17, 300};  // the last is out of range
    std::vector<float> ref(ids.size() * 576);
    cuda::embed_uniform_rows_reference(w.view, ids.data(), 4, ref.data());
    DeviceBuffer<uint32_t> dwords(w.words, 0, 0u);
    DeviceBuffer<uint16_t> dscales(w.scales, 0, 0);
    DeviceBuffer<uint8_t> dzeros(asymmetric ? w.zeros : std::vector<uint8_t>(1), 0, 0);
    DeviceBuffer<int32_t> dids(ids, 0, 0);
    DeviceBuffer<float> dh(std::vector<float>(ref.size(), kF32Sentinel), kGuard, kF32Sentinel);
    cpu::UniformWeightsView on_device = w.view;
    on_device.words = dwords.get();
    on_device.scales = dscales.get();
    on_device.zeros = asymmetric ? dzeros.get() : nullptr;
    ASSERT_EQ(cuda::embed_uniform_rows(on_device, dids.get(), 4, dh.get()), "");
    ASSERT_EQ(cuda::synchronize(), "");
    const std::vector<float> got = dh.read(kF32Sentinel);
    for (size_t i = 0; i < 3 * 576; ++i) ASSERT_EQ(got[i], ref[i]) << bits << " bits, element " << i;
    for (size_t i = 3 * 576; i < got.size(); ++i) ASSERT_TRUE(std::isnan(got[i])) << "element " << i;
  }
}

TEST(CudaDecodeOpsReference, DenseGemvNamesWhatItCannotTake) {
  std::vector<uint16_t> w(16 * 12);
  EXPECT_EQ(cuda::dense_gemv_problem({w.data(), 12, 16}, 16), "");
  EXPECT_NE(cuda::dense_gemv_problem({w.data(), 16, 12}, 1).find("multiple of 8"), std::string::npos);
  EXPECT_NE(cuda::dense_gemv_problem({w.data(), 12, 16}, 17).find("batch"), std::string::npos);
}

// The fp16-weight GEMV against its double-sum spec: odd rows, K = 4096 + 64, batches across
// the kernel's tiers; per element (K + 2) f32 roundoffs of sum |x w| plus one ulp of act.
TEST_P(CudaDecodeOpsOnDevice, DenseGemvMatchesReference) {
  SKIP_WITHOUT_GPU();
  const ActType act = GetParam();
  const int64_t rows = 4099, cols = 4160;
  const std::vector<uint16_t> w = random_act(rows * cols, 0.05f, 21, ActType::F16);
  DeviceBuffer<uint16_t> dw(w, 0, 0);
  for (int64_t m : {1, 3, 9, 16}) {
    const int64_t x_stride = cols + 8;
    const std::vector<uint16_t> x = random_act(m * x_stride, 1.f, 22, act);
    std::vector<float> xf(x.size()), ref(m * rows), bound(m * rows, 0.f);
    for (size_t i = 0; i < x.size(); ++i) xf[i] = cuda::from_act_bits(x[i], act);
    const cuda::HalfWeightsView host{w.data(), rows, cols};
    cuda::dense_matmul_f16_reference(host, xf.data(), m, x_stride, ref.data(), rows);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t n = 0; n < rows; ++n) {
        double sum_abs = 0;
        for (int64_t k = 0; k < cols; ++k)
          sum_abs += std::abs(xf[i * x_stride + k] * cuda::from_act_bits(w[n * cols + k], ActType::F16));
        bound[i * rows + n] = static_cast<float>((cols + 2) * kF32Epsilon * 2 * sum_abs);
      }
    DeviceBuffer<uint16_t> dx(x, 0, 0);
    DeviceBuffer<uint16_t> dy(std::vector<uint16_t>(m * rows, kActSentinel), kGuard, kActSentinel);
    ASSERT_EQ(cuda::dense_gemv_f16({dw.get(), rows, cols}, dx.get(), m, x_stride, dy.get(), rows, act), "");
    ASSERT_EQ(cuda::synchronize(), "");
    const std::vector<uint16_t> got = dy.read(kActSentinel);
    for (int64_t i = 0; i < m * rows; ++i) {
      const double g = cuda::from_act_bits(got[i], act);
      ASSERT_TRUE(std::isfinite(g));
      ASSERT_NEAR(g, ref[i], act_ulp(ref[i], act) + bound[i]) << "batch " << m << ", element " << i;
    }
  }
}

TEST_P(CudaDecodeOpsOnDevice, RmsNormToActMatchesReference) {
  SKIP_WITHOUT_GPU();
  const ActType act = GetParam();
  const int64_t rows = 5, cols = 4160;  // not a multiple of the block
  const std::vector<float> x = random_f32(rows * cols, 3.f, 1), w = random_f32(cols, 1.f, 2);
  std::vector<uint16_t> ref(rows * cols);
  cuda::rms_norm_to_act_reference(x.data(), w.data(), rows, cols, 1e-5f, ref.data(), act);
  DeviceBuffer<float> dx(x, 0, 0.f), dw(w, 0, 0.f);
  DeviceBuffer<uint16_t> dy(std::vector<uint16_t>(rows * cols, kActSentinel), kGuard, kActSentinel);
  ASSERT_EQ(cuda::rms_norm_to_act(dx.get(), dw.get(), rows, cols, 1e-5f, dy.get(), act), "");
  ASSERT_EQ(cuda::synchronize(), "");
  const std::vector<uint16_t> got = dy.read(kActSentinel);
  // f32 sum of squares over cols terms, rsqrtf (2 ulp), two products: relative error
  // (cols + 8) eps, then the act rounding.
  for (int64_t i = 0; i < rows * cols; ++i) {
    const double r = cuda::from_act_bits(ref[i], act), g = cuda::from_act_bits(got[i], act);
    ASSERT_NEAR(g, r, act_ulp(r, act) + (cols + 8) * kF32Epsilon * std::abs(r)) << "element " << i;
  }
}

TEST_P(CudaDecodeOpsOnDevice, AddAndSiluMulMatchReference) {
  SKIP_WITHOUT_GPU();
  const ActType act = GetParam();
  const int64_t rows = 3, cols = 1537, stride = 2 * cols + 5;
  const std::vector<uint16_t> gate_up = random_act(rows * stride, 2.f, 3, act);
  std::vector<uint16_t> ref(rows * cols);
  cuda::silu_mul_act_reference(gate_up.data(), gate_up.data() + cols, rows, cols, stride, ref.data(), act);
  DeviceBuffer<uint16_t> dgu(gate_up, 0, 0), dout(std::vector<uint16_t>(rows * cols, kActSentinel), kGuard,
                                                  kActSentinel);
  ASSERT_EQ(cuda::silu_mul_act(dgu.get(), dgu.get() + cols, rows, cols, stride, dout.get(), act), "");
  std::vector<float> h = random_f32(rows * cols, 1.f, 4), h_ref = h;
  DeviceBuffer<float> dh(h, kGuard, kF32Sentinel);
  ASSERT_EQ(cuda::add_act(dh.get(), dout.get(), rows * cols, act), "");
  ASSERT_EQ(cuda::synchronize(), "");
  const std::vector<uint16_t> got = dout.read(kActSentinel);
  for (int64_t i = 0; i < rows * cols; ++i) {
    const double r = cuda::from_act_bits(ref[i], act), g = cuda::from_act_bits(got[i], act);
    // expf (2 ulp), a division and a product in f32, then the act rounding.
    ASSERT_NEAR(g, r, act_ulp(r, act) + 8 * kF32Epsilon * std::abs(r)) << "element " << i;
  }
  // The residual adds exactly what the kernel wrote (one f32 addition, as on the host).
  cuda::add_act_reference(h_ref.data(), got.data(), rows * cols, act);
  EXPECT_EQ(dh.read(kF32Sentinel), h_ref);
}

struct AttentionCase {
  AttentionShape shape;
  int64_t pos;
};

void check_rope_and_attention(const AttentionCase& c, ActType act) {
  const AttentionShape& s = c.shape;
  const int64_t d = s.head_dim, stride = (s.heads + 2 * s.kv_heads) * d + 8;  // q | k | v | padding
  const int64_t cache_size = s.batch * s.kv_heads * s.capacity * d;
  std::vector<float> cos, sin;
  test::llama_rope_tables(s.capacity, d, cos, sin);
  const std::vector<uint16_t> qkv = random_act(s.batch * stride, 1.f, 5, act);
  // Earlier positions already in the caches; the step writes slot pos.
  std::vector<float> k_ref = random_f32(cache_size, 1.f, 6), v_ref = random_f32(cache_size, 1.f, 7);
  std::vector<float> q_ref(s.batch * s.heads * d);
  const uint16_t* q = qkv.data();
  cuda::rope_append_reference(s, q, q + s.heads * d, q + (s.heads + s.kv_heads) * d, stride, act, cos.data(),
                              sin.data(), c.pos, q_ref.data(), k_ref.data(), v_ref.data());
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  std::vector<uint16_t> out_ref(s.batch * s.heads * d);
  cuda::decode_attention_reference(s, q_ref.data(), k_ref.data(), v_ref.data(), c.pos, scale, out_ref.data(), act);

  DeviceBuffer<uint16_t> dqkv(qkv, 0, 0);
  DeviceBuffer<float> dcos(cos, 0, 0.f), dsin(sin, 0, 0.f);
  DeviceBuffer<float> dk(random_f32(cache_size, 1.f, 6), kGuard, kF32Sentinel);
  DeviceBuffer<float> dv(random_f32(cache_size, 1.f, 7), kGuard, kF32Sentinel);
  DeviceBuffer<float> dq(std::vector<float>(q_ref.size(), kF32Sentinel), kGuard, kF32Sentinel);
  DeviceBuffer<int32_t> dpos(std::vector<int32_t>{static_cast<int32_t>(c.pos)}, 0, 0);
  DeviceBuffer<uint16_t> dout(std::vector<uint16_t>(out_ref.size(), kActSentinel), kGuard, kActSentinel);
  const uint16_t* dq_in = dqkv.get();
  ASSERT_EQ(cuda::rope_append(s, dq_in, dq_in + s.heads * d, dq_in + (s.heads + s.kv_heads) * d, stride, act,
                              dcos.get(), dsin.get(), dpos.get(), dq.get(), dk.get(), dv.get()),
            "");
  ASSERT_EQ(cuda::decode_attention(s, dq.get(), dk.get(), dv.get(), dpos.get(), scale, dout.get(), act), "");
  ASSERT_EQ(cuda::synchronize(), "");

  // RoPE: x cos - y sin in f32 (two products and a difference, or a fused pair) against
  // double: at most 3 eps of the two terms, each at most the largest input (|cos|, |sin| <= 1).
  double max_in = 0;
  for (uint16_t v : qkv) max_in = std::max(max_in, std::abs(static_cast<double>(cuda::from_act_bits(v, act))));
  const double rope_tolerance = 3 * kF32Epsilon * 2 * max_in;
  const std::vector<float> q_got = dq.read(kF32Sentinel);
  for (size_t i = 0; i < q_ref.size(); ++i) ASSERT_NEAR(q_got[i], q_ref[i], rope_tolerance) << "query " << i;
  const std::vector<float> k_got = dk.read(kF32Sentinel), v_got = dv.read(kF32Sentinel);
  for (size_t i = 0; i < k_ref.size(); ++i) {
    ASSERT_NEAR(k_got[i], k_ref[i], rope_tolerance) << "key " << i;
    ASSERT_EQ(v_got[i], v_ref[i]) << "value " << i;  // a copy, exact
  }

  // Attention: a logit's f32 error is at most d eps of sum |q k| (times scale); a weight's
  // relative error then twice the largest logit error plus expf's 2 ulp; the output, a
  // weighted mean, gains that relative error of max |v| plus keys eps for the f32 sums.
  const int64_t keys = c.pos + 1, rep = s.heads / s.kv_heads;
  const std::vector<uint16_t> got = dout.read(kActSentinel);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h) {
      const int64_t kv = (b * s.kv_heads + h / rep) * s.capacity * d;
      double max_qk = 0, max_v = 0;
      for (int64_t j = 0; j < keys; ++j) {
        double qk = 0;
        for (int64_t i = 0; i < d; ++i) {
          qk += std::abs(q_ref[(b * s.heads + h) * d + i] * k_ref[kv + j * d + i]);
          max_v = std::max(max_v, static_cast<double>(std::abs(v_ref[kv + j * d + i])));
        }
        max_qk = std::max(max_qk, qk);
      }
      const double weight_error = 2 * (d + 2) * kF32Epsilon * max_qk * scale + 4 * kF32Epsilon;
      const double tolerance = (2 * weight_error + (keys + 4) * kF32Epsilon) * max_v;
      for (int64_t i = 0; i < d; ++i) {
        const int64_t at = (b * s.heads + h) * d + i;
        const double r = cuda::from_act_bits(out_ref[at], act), g = cuda::from_act_bits(got[at], act);
        ASSERT_NEAR(g, r, act_ulp(r, act) + tolerance) << "batch " << b << " head " << h << " dim " << i;
      }
    }
}

TEST_P(CudaDecodeOpsOnDevice, RopeAppendAndAttentionMatchReferenceSmolLM2Shape) {
  SKIP_WITHOUT_GPU();
  AttentionCase c;
  c.shape.batch = 3, c.shape.heads = 9, c.shape.kv_heads = 3, c.shape.head_dim = 64, c.shape.capacity = 300;
  c.pos = 257;  // keys not a multiple of the block's warps
  check_rope_and_attention(c, GetParam());
}

TEST_P(CudaDecodeOpsOnDevice, RopeAppendAndAttentionMatchReferenceLlamaShapeAtFirstAndLastSlot) {
  SKIP_WITHOUT_GPU();
  AttentionCase c;
  c.shape.batch = 1, c.shape.heads = 32, c.shape.kv_heads = 8, c.shape.head_dim = 128, c.shape.capacity = 4099;
  c.pos = 0;
  check_rope_and_attention(c, GetParam());
  c.pos = c.shape.capacity - 1;
  check_rope_and_attention(c, GetParam());
}

TEST_P(CudaDecodeOpsOnDevice, AttentionRunsAreBitIdentical) {
  SKIP_WITHOUT_GPU();
  const ActType act = GetParam();
  AttentionShape s;
  s.batch = 2, s.heads = 4, s.kv_heads = 2, s.head_dim = 96, s.capacity = 1000;
  const int64_t cache_size = s.batch * s.kv_heads * s.capacity * s.head_dim;
  DeviceBuffer<float> dq(random_f32(s.batch * s.heads * s.head_dim, 1.f, 8), 0, 0.f);
  DeviceBuffer<float> dk(random_f32(cache_size, 1.f, 9), 0, 0.f), dv(random_f32(cache_size, 1.f, 10), 0, 0.f);
  DeviceBuffer<int32_t> dpos(std::vector<int32_t>{999}, 0, 0);
  const std::vector<uint16_t> zeros(s.batch * s.heads * s.head_dim, 0);
  DeviceBuffer<uint16_t> a(zeros, 0, 0), b(zeros, 0, 0);
  ASSERT_EQ(cuda::decode_attention(s, dq.get(), dk.get(), dv.get(), dpos.get(), 0.1f, a.get(), act), "");
  ASSERT_EQ(cuda::decode_attention(s, dq.get(), dk.get(), dv.get(), dpos.get(), 0.1f, b.get(), act), "");
  ASSERT_EQ(cuda::synchronize(), "");
  EXPECT_EQ(a.read(0), b.read(0));
}

INSTANTIATE_TEST_SUITE_P(Acts, CudaDecodeOpsOnDevice, ::testing::Values(ActType::F16, ActType::BF16),
                         [](const ::testing::TestParamInfo<ActType>& info) {
                           return std::string(cuda::act_type_name(info.param));
                         });

}  // namespace
}  // namespace fsq
