// export_autoawq refuses what AutoAWQ GEMM cannot hold with one error line naming the
// source folder and the reason, and writes nothing.
#include <gtest/gtest.h>

#include <set>

#include "common/error.h"
#include "export_test_support.h"
#include "formats/export/autoawq.h"

namespace fsq {
namespace {

using test::TempDir;
namespace fs = std::filesystem;

class AutoAwqRefusal : public ::testing::Test {
 protected:
  TempDir tmp;
  fs::path packed_dir = tmp / "packed";
  fs::path out = tmp / "awq";

  void expect_refused(test::PackedSource& src, const std::string& problem) {
    test::expect_export_refused([&](const PackedCheckpoint& p) { export_autoawq(p, out); }, src, tmp.path(),
                                packed_dir, problem);
  }
};

// A linear AutoAWQ can hold, so each case fails only because of the one it adds.
void add_good_linear(test::PackedSource& src) { src.add_linear("model.layers.0.mlp.up_proj", "w4g32a", 16, 64, 1); }

TEST_F(AutoAwqRefusal, ThreeBitCodes) {
  test::PackedSource src;
  add_good_linear(src);
  src.add_linear("model.layers.0.mlp.gate_proj", "w3g32a", 16, 64, 2);
  expect_refused(src, "'model.layers.0.mlp.gate_proj' (w3g32a, 16 x 64) cannot be exported as AutoAWQ GEMM: "
                      "AutoAWQ GEMM stores 4-bit codes only, not 3-bit");
}

TEST_F(AutoAwqRefusal, SymmetricHasNoZeroPoints) {
  test::PackedSource src;
  add_good_linear(src);
  src.add_linear("model.layers.0.mlp.gate_proj", "w4g32s", 16, 64, 2);
  expect_refused(src, "symmetric quantization stores no zero points");
}

TEST_F(AutoAwqRefusal, PerChannelGroups) {
  test::PackedSource src;
  src.add_linear("model.layers.0.mlp.gate_proj", "w4pca", 16, 64, 2);
  expect_refused(src, "per-channel groups are not supported");
}

TEST_F(AutoAwqRefusal, OutputsNotAMultipleOfEight) {
  test::PackedSource src;
  add_good_linear(src);
  src.add_linear("model.layers.0.mlp.gate_proj", "w4g32a", 12, 64, 2);
  expect_refused(src, "12 output features are not a multiple of 8");
}

TEST_F(AutoAwqRefusal, MixedGroupSizes) {
  test::PackedSource src;
  add_good_linear(src);
  src.add_linear("model.layers.0.mlp.gate_proj", "w4g64a", 16, 64, 2);
  expect_refused(src, "has another group size than linear 'model.layers.0.mlp.gate_proj' (w4g64a)");
}

TEST_F(AutoAwqRefusal, NothingQuantized) {
  test::PackedSource src;
  src.add_dense("model.norm.weight", DType::F32, {4}, std::vector<float>(4, 1.0f));
  expect_refused(src, "has no quantized linear");
}

TEST_F(AutoAwqRefusal, DenseTensorBeyondFp16) {
  test::PackedSource src;
  add_good_linear(src);
  src.add_dense("model.norm.weight", DType::F32, {3}, std::vector<float>{1.0f, 1e6f, 1.0f});
  expect_refused(src, "tensor 'model.norm.weight': element 1 is not finite in fp16");
}

TEST_F(AutoAwqRefusal, DenseTensorNotFloat) {
  test::PackedSource src;
  add_good_linear(src);
  src.add_dense("model.position_ids", DType::I32, {4}, std::vector<int32_t>{0, 1, 2, 3});
  expect_refused(src, "tensor 'model.position_ids' is I32; only float tensors");
}

TEST_F(AutoAwqRefusal, BusyDestinationIsLeftAlone) {
  test::PackedSource src;
  add_good_linear(src);
  const PackedCheckpoint packed = src.write(packed_dir);
  fs::create_directories(out);
  test::write_bytes(out / "keep.txt", "mine");
  EXPECT_THROW(export_autoawq(packed, out), Error);
  EXPECT_EQ(test::read_bytes(out / "keep.txt"), "mine");
  EXPECT_EQ(std::distance(fs::directory_iterator(out), fs::directory_iterator()), 1);

  // An empty folder (made by the caller) is replaced by the export.
  fs::remove(out / "keep.txt");
  export_autoawq(packed, out);
  EXPECT_TRUE(fs::is_regular_file(out / "model.safetensors"));
}

// Unreachable through export_autoawq (a packed checkpoint's cols are always a multiple of
// its group size), so the rule itself is checked.
TEST(AutoAwqUnsupportedReason, NamesEachRule) {
  const UniformQuant w4g128a = find_uniform_quant("w4g128a");
  EXPECT_EQ(autoawq_unsupported_reason(w4g128a, 16, 256), "");
  EXPECT_EQ(autoawq_unsupported_reason(w4g128a, 16, 200),
            "200 input features are not a multiple of the group size 128");
  EXPECT_NE(autoawq_unsupported_reason(w4g128a, 20, 256).find("not a multiple of 8"), std::string::npos);
  EXPECT_NE(autoawq_unsupported_reason(find_uniform_quant("w8g128a"), 16, 256).find("not 8-bit"),
            std::string::npos);
  EXPECT_NE(autoawq_unsupported_reason({.bits = 4, .group_size = 16, .symmetric = false}, 16, 256)
                .find("group size 16 is not 32, 64 or 128"),
            std::string::npos);
}

}  // namespace
}  // namespace fsq
