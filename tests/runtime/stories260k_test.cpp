// The real stories260K checkpoint against the reference numbers in shared/models/MANIFEST.md.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "fixtures.h"
#include "formats/checkpoint.h"
#include "runtime/generate.h"
#include "runtime/model.h"
#include "runtime/threads.h"

namespace fsq {
namespace {

constexpr double kLogitTolerance = 1e-4;  // issue: per-position logits within 1e-4
// The sum of the 512 logits against the fp64 reference: 512 logits each within
// kLogitTolerance are within 512 times it. (2e-3, set from one AVX-512 machine's run, failed
// at 2.37e-3 on an AVX2-only one: the f32 BLAS kernels sum in other orders.)
constexpr double kLogitSumTolerance = 512 * kLogitTolerance;

std::filesystem::path model_dir() { return testing::stories260k_dir(); }

class Stories260K : public ::testing::Test {
 protected:
  void SetUp() override {
    FSQ_REQUIRE_FIXTURE(model_dir() / "model.safetensors", testing::kHowToStageShared);
    set_threads(0);
    model_ = LlamaModel::load(Checkpoint::open(model_dir()), RuntimeOptions{});
  }
  std::unique_ptr<LlamaModel> model_;
};

struct PositionReference {
  std::vector<int64_t> top5_ids;
  std::vector<double> top5_logits;
  double logit_sum;
};

TEST_F(Stories260K, LogitsMatchManifest) {
  // MANIFEST: input [1, 403, 407, 261, 378], float64 reference, top-5 per position.
  const std::vector<PositionReference> ref = {
      {{403, 385, 410, 317, 407}, {17.02352, 15.40621, 13.10826, 12.76917, 12.41809}, -1070.17223},
      {{407, 383, 261, 403, 432}, {18.45998, 14.29106, 10.89797, 10.66206, 10.31380}, -2162.15783},
      {{261, 407, 383, 286, 272}, {17.13697, 11.71021, 11.16944, 10.21106, 9.92219}, -2808.68608},
      {{378, 276, 328, 323, 376}, {18.87439, 11.02818, 9.88017, 8.78939, 8.19415}, -1423.07800},
      {{432, 383, 322, 353, 323}, {17.79940, 14.28126, 9.70965, 9.58729, 9.13424}, -2256.85245},
  };
  at::Tensor ids = at::tensor(std::vector<int64_t>{1, 403, 407, 261, 378}, at::kLong).view({1, -1});
  at::Tensor logits = model_->forward(ids)[0].to(at::kDouble);
  for (size_t p = 0; p < ref.size(); ++p) {
    auto top = logits[p].topk(5);
    for (int r = 0; r < 5; ++r) {
      EXPECT_EQ(std::get<1>(top)[r].item<int64_t>(), ref[p].top5_ids[r]) << "position " << p << " rank " << r;
      EXPECT_NEAR(logits[p][ref[p].top5_ids[r]].item<double>(), ref[p].top5_logits[r], kLogitTolerance)
          << "position " << p << " id " << ref[p].top5_ids[r];
    }
    EXPECT_NEAR(logits[p].sum().item<double>(), ref[p].logit_sum, kLogitSumTolerance) << "position " << p;
  }
}

TEST_F(Stories260K, GreedyGenerationReproducesManifest) {
  const std::vector<int32_t> expected = {1,   403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317,
                                         426, 338, 401, 396, 267, 337, 410, 408, 419, 292, 411, 322, 265, 282, 295,
                                         433, 426, 385, 328, 432, 358, 394, 261, 370, 432, 352, 266, 268, 388, 426};
  GenerateOptions opts;
  opts.max_new_tokens = 40;
  auto out = generate_greedy(*model_, {1, 403, 407, 261, 378}, opts);
  EXPECT_EQ(out, expected);
}

}  // namespace
}  // namespace fsq
