// A whole model run in f32 on the CPU from a bf16/f16 checkpoint keeps its matrices as stored:
// zero-copy views of the mapped file (no f32 copy of the model, issue 56), whose kernels
// widen each weight exactly. Compared with the same checkpoint widened to f32 at load time.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "common/half.h"
#include "formats/checkpoint.h"
#include "formats/safetensors.h"
#include "runtime/generate.h"
#include "runtime/model.h"
#include "temp_dir.h"
#include "tiny_model.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;

// The tiny f32 model rewritten with every tensor in `dtype` (bf16 or f16), in its own
// scratch folder.
testing::TempDir write_16bit_copy(const fs::path& f32_dir, DType dtype, const std::string& tag) {
  const Checkpoint f32 = Checkpoint::open(f32_dir);
  testing::TempDir scratch("fsq-as-stored-" + tag);
  const fs::path& dir = scratch.path();
  std::vector<std::vector<uint16_t>> storage;
  std::vector<TensorToWrite> tensors;
  storage.reserve(f32.tensors().size());
  for (const TensorView* v : f32.tensors()) {
    std::vector<float> values(static_cast<size_t>(v->numel()));
    std::memcpy(values.data(), v->data, v->nbytes);
    std::vector<uint16_t>& half = storage.emplace_back(values.size());
    for (size_t i = 0; i < values.size(); ++i)
      half[i] = dtype == DType::BF16 ? f32_to_bf16(values[i]) : f32_to_f16(values[i]);
    tensors.push_back({v->name, dtype, v->shape, std::as_bytes(std::span<const uint16_t>(half))});
  }
  write_safetensors(dir / "model.safetensors", tensors);
  fs::copy_file(f32_dir / "config.json", dir / "config.json");
  return scratch;
}

// The parameter is the dtype's name, so that test names read "bf16" and "f16".
class ModelAsStored : public ::testing::TestWithParam<std::string> {
 protected:
  DType dtype() const { return GetParam() == "bf16" ? DType::BF16 : DType::F16; }
};

TEST_P(ModelAsStored, MatricesStayMappedAndComputeTheWidenedModel) {
  // The prefill GEMM multiplies widened blocks of rows, the reference the whole widened
  // matrix: the same products, summed in an order the GEMM's blocking may change. Logits
  // are O(1) sums of 32-48 terms here: a few f32 roundings each.
  constexpr double kBlockedGemmTolerance = 1e-5;
  testing::TinyModelSpec spec;
  spec.tied = false;
  const testing::TempDir f32_dir_scratch("fsq-as-stored-f32");
  const fs::path& f32_dir = f32_dir_scratch.path();
  testing::write_tiny_model(f32_dir, spec);
  const testing::TempDir copy = write_16bit_copy(f32_dir, dtype(), GetParam());
  const fs::path& dir = copy.path();
  const Checkpoint ckpt = Checkpoint::open(dir);

  auto as_stored = LlamaModel::load(ckpt, RuntimeOptions{});
  RuntimeOptions widen;
  widen.weight_dtype = at::kFloat;  // the old behaviour: an f32 copy of every weight
  auto widened = LlamaModel::load(ckpt, widen);

  // Zero-copy: the linear's weight is the mapped tensor itself, in its stored dtype.
  const auto* q = dynamic_cast<const DenseLinear*>(as_stored->layers()[0].q.get());
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->weight().data_ptr(), static_cast<const void*>(ckpt.get("model.layers.0.self_attn.q_proj.weight").data));
  EXPECT_EQ(as_stored->embedding().data_ptr(), static_cast<const void*>(ckpt.get("model.embed_tokens.weight").data));
  EXPECT_EQ(as_stored->fast_decode_unavailable(), "");
  const auto* q_wide = dynamic_cast<const DenseLinear*>(widened->layers()[0].q.get());
  ASSERT_NE(q_wide, nullptr);
  EXPECT_EQ(q_wide->weight().scalar_type(), at::kFloat);

  const at::Tensor ids = at::arange(0, 24, at::kLong).remainder(spec.vocab).view({2, 12});
  const double diff = (as_stored->forward(ids) - widened->forward(ids)).abs().max().item<double>();
  EXPECT_LE(diff, kBlockedGemmTolerance);

  // Token-by-token decoding (the fast path's 16-bit GEMV) reads the same widened weights as
  // the f32 GEMV: the same bits, hence the same greedy tokens.
  GenerateOptions g;
  g.max_new_tokens = 16;
  const std::vector<int32_t> prompt = {1, 5, 9, 2};
  EXPECT_EQ(generate_greedy(*as_stored, prompt, g), generate_greedy(*widened, prompt, g));
}

TEST_P(ModelAsStored, TheMappedFileOutlivesTheCheckpointObject) {
  testing::TinyModelSpec spec;
  spec.tied = true;
  const testing::TempDir f32_dir_scratch("fsq-as-stored-f32");
  const fs::path& f32_dir = f32_dir_scratch.path();
  testing::write_tiny_model(f32_dir, spec);
  const testing::TempDir copy = write_16bit_copy(f32_dir, dtype(), "owner-" + GetParam());
  const fs::path& dir = copy.path();
  std::unique_ptr<LlamaModel> model;
  {
    const Checkpoint ckpt = Checkpoint::open(dir);
    model = LlamaModel::load(ckpt, RuntimeOptions{});
  }  // the checkpoint is gone; its shard must not be unmapped under the model
  const at::Tensor logits = model->forward(at::arange(0, 6, at::kLong).view({1, -1}));
  EXPECT_TRUE(at::isfinite(logits).all().item<bool>());
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ModelAsStored, ::testing::Values(std::string("bf16"), std::string("f16")),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace fsq
