// The fuzz_packed seeds (tests/fuzz/corpus/packed, written by tests/fuzz/make_corpus.py)
// are valid packed checkpoints: each opens with the real reader when paired with
// tests/fuzz/packed/{config.json,fsq.json} the way the harness pairs it (tensor_sha256
// replaced by the names the seed holds, sha256 not verified), and every linear unpacks and
// dequantizes to finite weights. A seed that failed to open would only fuzz error paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "common/json_file.h"
#include "formats/packed_checkpoint.h"
#include "formats/safetensors.h"
#include "test_support.h"

namespace fsq {
namespace {

using test::TempDir;
namespace fs = std::filesystem;
using json = nlohmann::json;

const fs::path kFixed = fs::path(FSQ_SOURCE_DIR) / "tests/fuzz/packed";
const fs::path kSeeds = fs::path(FSQ_SOURCE_DIR) / "tests/fuzz/corpus/packed";
const char* const kLut4 = "model.layers.0.mlp.down_proj";
const char* const kLut3 = "model.layers.0.mlp.up_proj";
const char* const kUniform = "model.layers.0.self_attn.q_proj";

std::vector<fs::path> seeds() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(kSeeds)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::set<std::string> tensor_names(const fs::path& safetensors) {
  std::set<std::string> names;
  const auto file = SafetensorsFile::open(safetensors);
  for (const TensorView& t : file->tensors()) names.insert(t.name);
  return names;
}

// The folder fuzz_packed builds for `seed`.
void make_folder(const fs::path& dir, const fs::path& seed) {
  fs::copy_file(kFixed / kPackedConfigFile, dir / kPackedConfigFile);
  fs::copy_file(seed, dir / kPackedWeightsFile);
  json manifest = read_json_file(kFixed / kPackedManifestFile);
  json hashes = json::object();
  for (const std::string& name : tensor_names(seed)) hashes[name] = std::string(64, '0');
  manifest["tensor_sha256"] = hashes;
  test::write_bytes(dir / kPackedManifestFile, manifest.dump(2));
}

TEST(PackedFuzzSeeds, EverySeedOpensAndDequantizes) {
  const std::vector<fs::path> all = seeds();
  ASSERT_GE(all.size(), 5u) << kSeeds;
  for (const fs::path& seed : all) {
    SCOPED_TRACE(seed.filename().string());
    EXPECT_LT(fs::file_size(seed), 4096u);
    TempDir dir;
    make_folder(dir.path(), seed);
    const PackedCheckpoint ckpt = PackedCheckpoint::open(dir.path(), {.verify_sha256 = false});
    ASSERT_EQ(ckpt.linears().size(), 3u);
    const PackedLinear* lut4 = ckpt.find_linear(kLut4);
    const PackedLinear* lut3 = ckpt.find_linear(kLut3);
    const PackedLinear* uniform = ckpt.find_linear(kUniform);
    ASSERT_TRUE(lut4 && lut3 && uniform);
    EXPECT_EQ(lut4->lut_bits, 4);
    EXPECT_EQ(lut3->lut_bits, 3);
    EXPECT_EQ(lut3->sparse_row_ptr, nullptr);  // dense-only in every seed
    EXPECT_FALSE(uniform->is_lut());
    EXPECT_NE(uniform->bias, nullptr);
    if (seed.filename() == "lut_dense_only.safetensors") {
      EXPECT_EQ(lut4->sparse_row_ptr, nullptr);
    } else {
      ASSERT_NE(lut4->sparse_row_ptr, nullptr);
      EXPECT_EQ(lut4->sparse_col->dtype, DType::U16);
    }
    for (const PackedLinear& l : ckpt.linears()) {
      const std::vector<float> w = dequantize_linear(l);
      ASSERT_EQ(w.size(), static_cast<size_t>(l.rows * l.cols)) << l.name;
      EXPECT_TRUE(std::all_of(w.begin(), w.end(), [](float v) { return std::isfinite(v); })) << l.name;
    }
  }
}

// The edge cases the seeds are there for really are in them.
TEST(PackedFuzzSeeds, CoverEmptyRowsAFullRowAndAnEmptySparsePart) {
  auto row_ptr = [](const std::string& seed_name) {
    TempDir dir;
    make_folder(dir.path(), kSeeds / seed_name);
    const PackedCheckpoint ckpt = PackedCheckpoint::open(dir.path(), {.verify_sha256 = false});
    return unpack_lut_linear(*ckpt.find_linear(kLut4)).row_ptr;
  };
  const std::vector<int32_t> empty_rows = row_ptr("lut_csr_empty_rows.safetensors");
  EXPECT_EQ(empty_rows[0], empty_rows[1]);
  EXPECT_EQ(empty_rows[2], empty_rows[3]);
  const std::vector<int32_t> full = row_ptr("lut_csr_full_row.safetensors");
  EXPECT_EQ(full[2] - full[1], 22);  // row 1: every one of the 22 columns
  EXPECT_EQ(row_ptr("lut_csr_nnz0.safetensors"), std::vector<int32_t>(5, 0));
}

// The committed fsq.json as it stands names exactly the tensors of the CSR seeds.
TEST(PackedFuzzSeeds, CommittedManifestListsTheCsrSeedsTensors) {
  const json manifest = read_json_file(kFixed / kPackedManifestFile);
  std::set<std::string> listed;
  for (const auto& [name, hash] : manifest["tensor_sha256"].items()) listed.insert(name);
  EXPECT_EQ(listed, tensor_names(kSeeds / "lut_csr.safetensors"));
}

}  // namespace
}  // namespace fsq
