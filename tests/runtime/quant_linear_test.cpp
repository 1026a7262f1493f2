// QuantLinear: forward through both paths (fused GEMV for <= 8 rows, blocked dequantize +
// GEMM above) on every ISA and quant type, leading batch dimensions, bias, bf16/f16 input,
// and construction from a packed checkpoint written to disk.
#include "runtime/quant_linear.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "common/error.h"
#include "formats/packed_checkpoint.h"
#include "cpu/uniform_test_support.h"

namespace fsq {
namespace {

using cpu::CpuIsa;
using test::PackedWeights;

const int64_t kForwardRowCounts[] = {1, 9, 33};  // GEMV, then the blocked GEMM path
const int64_t kOutFeatures[] = {1, 7, 129};

template <typename T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

QuantLinear make_linear(const PackedWeights& w, std::optional<at::Tensor> bias = std::nullopt) {
  const QuantizedMatrix& c = w.canonical;
  return QuantLinear(c.quant, c.rows, c.cols, bytes_of(w.words), bytes_of(c.scales), bytes_of(c.zeros),
                     std::move(bias), "rtn");
}

at::Tensor to_tensor(const std::vector<float>& v, std::vector<int64_t> shape) {
  return at::from_blob(const_cast<float*>(v.data()), shape, at::kFloat).clone();
}

std::vector<float> to_vector(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kFloat).contiguous();
  return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

std::vector<float> as_floats(const std::vector<double>& v) { return {v.begin(), v.end()}; }

// x [m, cols] dense; returns y [m, rows] = x W'^T in double, rounded to float.
std::vector<float> reference(const PackedWeights& w, const std::vector<float>& x, int64_t m) {
  const QuantizedMatrix& c = w.canonical;
  return as_floats(test::naive_matmul(w.dequantized(), c.rows, c.cols, x.data(), m, c.cols));
}

TEST(QuantLinear, ForwardMatchesReferenceOnEveryIsaAndType) {
  for (const UniformQuantType& t : uniform_quant_types()) {
    for (const test::KGroup& kg : test::test_k_groups()) {
      if (kg.group_size != t.quant.group_size) continue;
      for (int64_t rows : kOutFeatures) {
        const PackedWeights w(t.quant, rows, kg.cols, 41);
        QuantLinear linear = make_linear(w);
        const int64_t max_m = kForwardRowCounts[std::size(kForwardRowCounts) - 1];
        const std::vector<float> x = test::activations(max_m, kg.cols, kg.cols, 9);
        const std::vector<float> ref = reference(w, x, max_m);
        for (CpuIsa isa : test::supported_isas()) {
          linear.set_cpu_isa(isa);
          for (int64_t m : kForwardRowCounts) {
            SCOPED_TRACE(linear.describe() + " " + cpu::cpu_isa_name(isa) + " m=" + std::to_string(m));
            const std::vector<float> xm(x.begin(), x.begin() + m * kg.cols);
            const at::Tensor y = linear.forward(to_tensor(xm, {m, kg.cols}));
            ASSERT_EQ(y.sizes(), (at::IntArrayRef{m, rows}));
            ASSERT_TRUE(test::nmse_within(to_vector(y).data(), ref.data(), m * rows, test::kKernelNmse));
          }
        }
      }
    }
  }
}

TEST(QuantLinear, PrefillCoversSeveralWeightBlocks) {
  // More output rows than one dequantized block (256), the last block partial.
  for (const char* type : {"w4g32a", "w3pcs"}) {
    const PackedWeights w(find_uniform_quant(type), 600, 96, 43);
    QuantLinear linear = make_linear(w);
    const int64_t m = 17;
    const std::vector<float> x = test::activations(m, 96, 96, 13);
    const std::vector<float> ref = reference(w, x, m);
    for (CpuIsa isa : test::supported_isas()) {
      SCOPED_TRACE(linear.describe() + " " + cpu::cpu_isa_name(isa));
      linear.set_cpu_isa(isa);
      EXPECT_TRUE(test::nmse_within(to_vector(linear.forward(to_tensor(x, {m, 96}))).data(), ref.data(), m * 600,
                                    test::kKernelNmse));
    }
  }
}

TEST(QuantLinear, BatchDimensionsBiasAndHalfPrecisionInput) {
  const int64_t rows = 129, cols = 576;
  const PackedWeights w(find_uniform_quant("w4g64a"), rows, cols, 47);
  const std::vector<float> bias = test::gaussian(1, rows, 48, 1.0f);
  const QuantLinear linear = make_linear(w, to_tensor(bias, {rows}));
  const std::vector<float> x = test::activations(6, cols, cols, 17);
  std::vector<float> ref = reference(w, x, 6);
  for (size_t j = 0; j < ref.size(); ++j) ref[j] += bias[j % rows];

  const at::Tensor y = linear.forward(to_tensor(x, {2, 3, cols}));
  ASSERT_EQ(y.sizes(), (at::IntArrayRef{2, 3, rows}));
  EXPECT_EQ(y.scalar_type(), at::kFloat);
  EXPECT_TRUE(test::nmse_within(to_vector(y).data(), ref.data(), 6 * rows, test::kKernelNmse));

  for (at::ScalarType half : {at::kBFloat16, at::kHalf}) {
    SCOPED_TRACE(c10::toString(half));
    const at::Tensor x_half = to_tensor(x, {2, 3, cols}).to(half);
    const at::Tensor y_half = linear.forward(x_half);
    EXPECT_EQ(y_half.scalar_type(), half);
    ASSERT_EQ(y_half.sizes(), (at::IntArrayRef{2, 3, rows}));
    // Against the reference on the rounded input: only the output rounding remains.
    std::vector<float> ref_half = reference(w, to_vector(x_half), 6);
    for (size_t j = 0; j < ref_half.size(); ++j) ref_half[j] += bias[j % rows];
    EXPECT_TRUE(test::nmse_within(to_vector(y_half).data(), ref_half.data(), 6 * rows, test::kKernelNmse));
  }
}

// forward_rows_together (the decode step's q/k/v and gate/up) gives each linear's
// forward_rows output bit for bit, biases included, where all are on the int8 decode path
// with one layout; otherwise it runs nothing and says so.
TEST(QuantLinear, RowsTogetherEqualRowsOneByOne) {
  const UniformQuant q{4, 64, false};
  const PackedWeights a(q, 129, 576, 1), b(q, 37, 576, 2), c(q, 48, 576, 3), narrow(q, 16, 128, 4);
  std::vector<float> bias_values(37);
  for (size_t i = 0; i < bias_values.size(); ++i) bias_values[i] = 0.25f * static_cast<float>(i) - 3.0f;
  QuantLinear la = make_linear(a), lb = make_linear(b, to_tensor(bias_values, {37})), lc = make_linear(c),
              ln = make_linear(narrow);
  for (QuantLinear* l : {&la, &lb, &lc, &ln}) l->set_int8_decode(true);
  if (!la.int8_decode()) GTEST_SKIP() << "no int8-activation GEMV for w4g64 on this CPU";
  const int64_t m = 3;
  const std::vector<float> x = test::activations(m, 576, 576, 5);
  std::vector<float> want[3], got[3];
  const Linear* const linears[] = {&la, &lb, &lc};
  float* outs[3];
  for (int j = 0; j < 3; ++j) {
    const int64_t rows = linears[j]->out_features();
    want[j].assign(static_cast<size_t>(m * rows), 0.0f);
    got[j].assign(static_cast<size_t>(m * rows), -1.0f);
    linears[j]->forward_rows(x.data(), m, want[j].data());
    outs[j] = got[j].data();
  }
  ASSERT_TRUE(forward_rows_together(linears, x.data(), m, outs));
  for (int j = 0; j < 3; ++j) EXPECT_EQ(want[j], got[j]) << "linear " << j;

  const Linear* const mixed[] = {&la, &ln};  // 576 and 128 columns: no shared panel
  float* mixed_outs[] = {got[0].data(), got[1].data()};
  EXPECT_FALSE(forward_rows_together(mixed, x.data(), m, mixed_outs));
  lb.set_int8_decode(false);
  EXPECT_FALSE(forward_rows_together(linears, x.data(), m, outs));
}

TEST(QuantLinear, RejectsBadShapes) {
  const PackedWeights w(find_uniform_quant("w8g32s"), 8, 64, 53);
  const QuantLinear linear = make_linear(w);
  EXPECT_THROW(linear.forward(at::zeros({2, 63})), Error);
  EXPECT_THROW(linear.forward(at::zeros({2, 64}, at::kInt)), Error);
  const QuantizedMatrix& c = w.canonical;
  const std::vector<uint32_t> short_words(w.words.begin(), w.words.end() - 1);
  EXPECT_THROW(QuantLinear(c.quant, 8, 64, bytes_of(short_words), bytes_of(c.scales), {}, std::nullopt, ""), Error);
  EXPECT_THROW(QuantLinear(c.quant, 8, 64, bytes_of(w.words), bytes_of(c.scales), bytes_of(c.scales), std::nullopt,
                           ""),
               Error);  // a symmetric type given zero points
  EXPECT_THROW(QuantLinear(c.quant, 8, 64, bytes_of(w.words), bytes_of(c.scales), {}, at::zeros({7}), ""), Error);
}

TEST(QuantLinear, FromPackedCheckpoint) {
  namespace fs = std::filesystem;
  const int64_t hidden = 96, vocab = 16;
  const test::TempDir tmp;
  const std::vector<float> embed = test::gaussian(vocab, hidden, 1);
  const std::vector<float> q_bias = test::gaussian(1, hidden, 2);
  PackedCheckpointToWrite ckpt;
  ckpt.source_config = nlohmann::json::parse(test::llama_config({{"hidden_size", hidden}}));
  ckpt.dense = {{"model.embed_tokens.weight", DType::F32, {vocab, hidden}, test::as_bytes(embed)},
                {"model.layers.0.self_attn.q_proj.bias", DType::F32, {hidden}, test::as_bytes(q_bias)}};
  ckpt.linears.push_back({"model.layers.0.self_attn.q_proj",
                          test::quantized(hidden, hidden, find_uniform_quant("w4g32a"), 3), "rtn", {}, std::nullopt});
  ckpt.linears.push_back({"model.layers.0.mlp.down_proj",
                          test::quantized(hidden, 100, find_uniform_quant("w3pcs"), 4), "awq", {}, std::nullopt});
  ckpt.source_sha256 = std::string(64, 'a');
  write_packed_checkpoint(ckpt, tmp / "packed");
  const PackedCheckpoint opened = PackedCheckpoint::open(tmp / "packed");

  for (const PackedLinear& packed : opened.linears()) {
    SCOPED_TRACE(packed.name);
    const std::unique_ptr<Linear> linear = make_quant_linear(packed);
    EXPECT_EQ(linear->in_features(), packed.cols);
    EXPECT_EQ(linear->out_features(), packed.rows);
    EXPECT_EQ(linear->describe(), packed.quant_type + " [" + std::to_string(packed.rows) + " x " +
                                      std::to_string(packed.cols) + "] " + packed.method);
    const int64_t bias_bytes = packed.bias ? packed.rows * 4 : 0;
    EXPECT_EQ(linear->weight_bytes(), static_cast<int64_t>(packed.qweight->nbytes + packed.scales->nbytes +
                                                           (packed.qzeros ? packed.qzeros->nbytes : 0)) +
                                          bias_bytes);
    const std::vector<float> w = dequantize_linear(packed);
    const int64_t m = 3;
    const std::vector<float> x = test::activations(m, packed.cols, packed.cols, 21);
    std::vector<float> ref = as_floats(test::naive_matmul(w, packed.rows, packed.cols, x.data(), m, packed.cols));
    for (size_t j = 0; packed.bias && j < ref.size(); ++j) ref[j] += q_bias[j % packed.rows];
    const at::Tensor y = linear->forward(to_tensor(x, {m, packed.cols}));
    EXPECT_TRUE(test::nmse_within(to_vector(y).data(), ref.data(), m * packed.rows, test::kKernelNmse));
  }
}

}  // namespace
}  // namespace fsq
