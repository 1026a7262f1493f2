// CalibrationFileWriter (lib/calib/calib_file_writer.h): tensors written in any order land
// where the header says, the final provenance replaces the provisional one, and a file with a
// tensor missing or metadata outgrowing its room is never published.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "calib/calib_file.h"
#include "calib/calib_file_writer.h"
#include "common/error.h"
#include "formats/safetensors.h"
#include "temp_dir.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;

std::vector<float> ramp(size_t n, float start) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

std::span<const std::byte> bytes_of(const std::vector<float>& v) { return std::as_bytes(std::span(v)); }

TensorLayout layout_of(const std::string& name, std::vector<int64_t> shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return {name, DType::F32, std::move(shape), n * sizeof(float)};
}

const std::vector<TensorLayout> kLayout = {layout_of("model.layers.1.mlp.down_proj.fisher", {3, 5}),
                                           layout_of("model.layers.0.mlp.down_proj.fisher", {3, 5}),
                                           layout_of("model.layers.0.mlp.down_proj.input_absmax", {5})};

TEST(CalibrationFileWriter, TensorsWrittenInAnyOrderReadBackWithTheFinalProvenance) {
  const testing::TempDir dir("fsq-calib-writer");
  const fs::path path = dir / "calib.safetensors";
  const auto top = ramp(15, 100), bottom = ramp(15, 0), absmax = ramp(5, -2);
  {
    CalibrationFileWriter w(path, kLayout, {{"fisher", true}, {"mean_loss", 0.0}});
    w.write("model.layers.0.mlp.down_proj.input_absmax", bytes_of(absmax));
    w.write("model.layers.1.mlp.down_proj.fisher", bytes_of(top));  // the top layer comes first
    EXPECT_FALSE(fs::exists(path));
    w.write("model.layers.0.mlp.down_proj.fisher", bytes_of(bottom));
    w.commit({{"fisher", true}, {"mean_loss", 2.718281828459045}});
  }
  auto file = SafetensorsFile::open(path);
  auto expect_values = [&](const std::string& name, const std::vector<float>& want) {
    const TensorView* t = file->find(name);
    ASSERT_NE(t, nullptr) << name;
    ASSERT_EQ(t->nbytes, want.size() * sizeof(float)) << name;
    EXPECT_EQ(0, std::memcmp(t->data, want.data(), t->nbytes)) << name;
  };
  expect_values("model.layers.1.mlp.down_proj.fisher", top);
  expect_values("model.layers.0.mlp.down_proj.fisher", bottom);
  expect_values("model.layers.0.mlp.down_proj.input_absmax", absmax);
  const auto prov = nlohmann::json::parse(file->metadata().at("fsq.provenance"));
  EXPECT_EQ(prov["mean_loss"].get<double>(), 2.718281828459045);
  EXPECT_EQ(file->metadata().at("fsq.kind"), kCalibKind);
}

TEST(CalibrationFileWriter, NothingIsPublishedWhenATensorIsMissing) {
  const testing::TempDir dir("fsq-calib-writer-missing");
  const fs::path path = dir / "calib.safetensors";
  {
    CalibrationFileWriter w(path, kLayout, {{"fisher", true}});
    w.write("model.layers.1.mlp.down_proj.fisher", bytes_of(ramp(15, 0)));
    try {
      w.commit({{"fisher", true}});
      FAIL() << "commit published a file with two tensors never written";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("was never written"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(fs::is_empty(dir.path())) << "a temporary file was left behind";
}

TEST(CalibrationFileWriter, RefusesUnknownRepeatedAndMisSizedTensorsAndOvergrownMetadata) {
  const testing::TempDir dir("fsq-calib-writer-bad");
  const fs::path path = dir / "calib.safetensors";
  CalibrationFileWriter w(path, kLayout, {{"note", ""}});
  EXPECT_THROW(w.write("model.layers.2.mlp.down_proj.fisher", bytes_of(ramp(15, 0))), Error);
  EXPECT_THROW(w.write("model.layers.0.mlp.down_proj.fisher", bytes_of(ramp(14, 0))), Error);
  w.write("model.layers.0.mlp.down_proj.fisher", bytes_of(ramp(15, 0)));
  EXPECT_THROW(w.write("model.layers.0.mlp.down_proj.fisher", bytes_of(ramp(15, 0))), Error);
  w.write("model.layers.1.mlp.down_proj.fisher", bytes_of(ramp(15, 0)));
  w.write("model.layers.0.mlp.down_proj.input_absmax", bytes_of(ramp(5, 0)));
  const std::string grown(CalibrationFileWriter::kMetadataSlack + 64, 'x');
  EXPECT_THROW(w.commit({{"note", grown}}), Error);
  EXPECT_FALSE(fs::exists(path));
}

}  // namespace
}  // namespace fsq
