// The LibTorch model against a naive double-precision forward written here from the
// LLaMA equations, reading weights straight from the safetensors file.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "formats/checkpoint.h"
#include "common/error.h"
#include "runtime/model.h"
#include "temp_dir.h"
#include "tiny_model.h"

namespace fsq {
namespace {

constexpr double kReferenceTolerance = 1e-4;  // fp32 model vs fp64 reference, max abs logit diff

using Vec = std::vector<double>;
using Mat = std::vector<Vec>;  // [rows][cols]

struct NaiveModel {
  const Checkpoint& ckpt;
  const ModelConfig& c;

  Vec tensor(const std::string& name) const {
    const TensorView& v = ckpt.get(name);
    const float* p = reinterpret_cast<const float*>(v.data);
    return Vec(p, p + v.numel());
  }
  // y = W x (+ b), W [out, in] row-major.
  Vec linear(const std::string& base, const Vec& x, bool bias) const {
    Vec w = tensor(base + ".weight");
    size_t in = x.size(), out = w.size() / in;
    Vec y(out, 0.0);
    for (size_t o = 0; o < out; ++o)
      for (size_t i = 0; i < in; ++i) y[o] += w[o * in + i] * x[i];
    if (bias) {
      Vec b = tensor(base + ".bias");
      for (size_t o = 0; o < out; ++o) y[o] += b[o];
    }
    return y;
  }
  Vec rms(const Vec& x, const std::string& name) const {
    Vec w = tensor(name);
    double ss = 0;
    for (double v : x) ss += v * v;
    double inv = 1.0 / std::sqrt(ss / x.size() + c.rms_norm_eps);
    Vec y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = w[i] * x[i] * inv;
    return y;
  }
  // Rotates pairs (i, i + D/2) of each head by position * theta^(-2i/D).
  void rope(Vec& v, int64_t heads, int64_t pos) const {
    const int64_t D = c.head_dim, half = D / 2;
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < half; ++i) {
        double angle = pos * std::pow(c.rope_theta, -2.0 * i / D);
        double a = v[h * D + i], b = v[h * D + i + half];
        v[h * D + i] = a * std::cos(angle) - b * std::sin(angle);
        v[h * D + i + half] = b * std::cos(angle) + a * std::sin(angle);
      }
  }

  Mat forward(const std::vector<int64_t>& ids, bool qkv_bias) const {
    const int64_t T = static_cast<int64_t>(ids.size()), H = c.hidden_size, D = c.head_dim;
    Vec emb = tensor("model.embed_tokens.weight");
    Mat h(T, Vec(H));
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = 0; j < H; ++j) h[t][j] = emb[ids[t] * H + j];
    for (int64_t l = 0; l < c.num_layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      Mat q(T), k(T), v(T);
      for (int64_t t = 0; t < T; ++t) {
        Vec x = rms(h[t], p + "input_layernorm.weight");
        q[t] = linear(p + "self_attn.q_proj", x, qkv_bias);
        k[t] = linear(p + "self_attn.k_proj", x, qkv_bias);
        v[t] = linear(p + "self_attn.v_proj", x, qkv_bias);
        rope(q[t], c.num_heads, t);
        rope(k[t], c.num_kv_heads, t);
      }
      const int64_t rep = c.num_heads / c.num_kv_heads;
      for (int64_t t = 0; t < T; ++t) {
        Vec attn(c.num_heads * D, 0.0);
        for (int64_t hd = 0; hd < c.num_heads; ++hd) {
          const int64_t kv = hd / rep;
          Vec s(t + 1);
          double mx = -1e300;
          for (int64_t u = 0; u <= t; ++u) {
            double dot = 0;
            for (int64_t d = 0; d < D; ++d) dot += q[t][hd * D + d] * k[u][kv * D + d];
            s[u] = dot / std::sqrt(static_cast<double>(D));
            mx = std::max(mx, s[u]);
          }
          double z = 0;
          for (double& e : s) z += (e = std::exp(e - mx));
          for (int64_t u = 0; u <= t; ++u)
            for (int64_t d = 0; d < D; ++d) attn[hd * D + d] += s[u] / z * v[u][kv * D + d];
        }
        Vec o = linear(p + "self_attn.o_proj", attn, false);
        for (int64_t j = 0; j < H; ++j) h[t][j] += o[j];
        Vec y = rms(h[t], p + "post_attention_layernorm.weight");
        Vec g = linear(p + "mlp.gate_proj", y, false), up = linear(p + "mlp.up_proj", y, false);
        for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * up[i];
        Vec dn = linear(p + "mlp.down_proj", g, false);
        for (int64_t j = 0; j < H; ++j) h[t][j] += dn[j];
      }
    }
    const std::string head = c.tie_word_embeddings ? "model.embed_tokens" : "lm_head";
    Mat logits(T);
    for (int64_t t = 0; t < T; ++t) logits[t] = linear(head, rms(h[t], "model.norm.weight"), false);
    return logits;
  }
};

void expect_matches_reference(const testing::TinyModelSpec& spec, bool qkv_bias) {
  const testing::TempDir scratch("fsq-ref");
  const auto& dir = scratch.path();
  testing::write_tiny_model(dir, spec);
  auto ckpt = Checkpoint::open(dir);
  auto model = LlamaModel::load(ckpt, RuntimeOptions{});
  std::vector<int64_t> ids = {1, 5, 9, 33, 2, 17, 60, 4, 4, 11};
  at::Tensor logits = model->forward(at::tensor(ids, at::kLong).view({1, -1}));
  Mat ref = NaiveModel{ckpt, ckpt.config()}.forward(ids, qkv_bias);
  double max_diff = 0;
  for (size_t t = 0; t < ids.size(); ++t)
    for (int64_t j = 0; j < spec.vocab; ++j)
      max_diff = std::max(max_diff, std::abs(ref[t][j] - logits[0][t][j].item<double>()));
  EXPECT_LE(max_diff, kReferenceTolerance);
}

TEST(ModelReference, GqaUntiedMatchesNaiveForward) {
  testing::TinyModelSpec s;
  s.heads = 4;
  s.kv_heads = 2;
  expect_matches_reference(s, false);
}

TEST(ModelReference, MhaTiedMatchesNaiveForward) {
  testing::TinyModelSpec s;
  s.heads = 4;
  s.kv_heads = 4;
  s.tied = true;
  s.rope_theta = 500000.0;
  expect_matches_reference(s, false);
}

TEST(ModelReference, Qwen2BiasesMatchNaiveForward) {
  testing::TinyModelSpec s;
  s.architecture = "Qwen2ForCausalLM";
  s.heads = 8;
  s.kv_heads = 2;
  s.hidden = 64;
  expect_matches_reference(s, true);
}

TEST(ModelReference, Bf16ComputeStaysCloseToF32) {
  constexpr double kBf16Tolerance = 0.1;  // bf16 keeps ~3 significant digits; logits are O(1)
  const testing::TempDir scratch("fsq-bf16");
  const auto& dir = scratch.path();
  testing::write_tiny_model(dir, testing::TinyModelSpec{});
  auto ckpt = Checkpoint::open(dir);
  auto f32 = LlamaModel::load(ckpt, RuntimeOptions{});
  RuntimeOptions bf;
  bf.compute_dtype = at::kBFloat16;
  auto bf16 = LlamaModel::load(ckpt, bf);
  at::Tensor ids = at::arange(0, 20, at::kLong).view({1, -1});
  double diff = (f32->forward(ids) - bf16->forward(ids)).abs().max().item<double>();
  EXPECT_LE(diff, kBf16Tolerance);
}

TEST(ModelLoad, ShapeDisagreeingWithConfigNamesTheTensor) {
  const testing::TempDir scratch("fsq-badshape");
  const auto& dir = scratch.path();
  testing::TinyModelSpec s;
  testing::write_tiny_model(dir, s);
  // Rewrite config.json with a larger intermediate size than the stored tensors have.
  testing::TinyModelSpec wrong = s;
  wrong.intermediate = s.intermediate + 8;
  const testing::TempDir other_scratch("fsq-badshape-cfg");
  const auto& other = other_scratch.path();
  testing::write_tiny_model(other, wrong);
  std::filesystem::copy_file(other / "config.json", dir / "config.json",
                             std::filesystem::copy_options::overwrite_existing);
  try {
    LlamaModel::load(Checkpoint::open(dir), RuntimeOptions{});
    FAIL() << "expected fsq::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mlp.gate_proj.weight"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fsq
