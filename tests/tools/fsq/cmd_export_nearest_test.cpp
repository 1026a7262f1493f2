// fsq export --rounding nearest writes the blocks llama-quantize writes without an importance
// matrix: from one source, every tensor of fsq's file has llama-quantize's type and bytes.
// Needs llama.cpp's binaries (FSQ_LLAMA_CPP_BIN; scripts/test.sh sets it under CI).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

#include "cli_support.h"
#include "formats/gguf/gguf_reader.h"

namespace fsq::clitest {
namespace {

namespace fs = std::filesystem;

// Every tensor of `ours` has the type and bytes of the same-named tensor of `theirs`.
void expect_same_tensors(const fs::path& ours, const fs::path& theirs, const std::string& label) {
  auto a = GgufFile::open(ours), b = GgufFile::open(theirs);
  ASSERT_EQ(a->tensors().size(), b->tensors().size()) << label;
  int matrices = 0;
  for (const auto& t : a->tensors()) {
    const GgufTensorInfo* u = b->find_tensor(t.name);
    ASSERT_NE(u, nullptr) << label << ": llama-quantize wrote no " << t.name;
    ASSERT_EQ(ggml_type_name(t.type), ggml_type_name(u->type)) << label << ": " << t.name;
    ASSERT_EQ(t.nbytes, u->nbytes) << label << ": " << t.name;
    EXPECT_EQ(0, std::memcmp(t.data, u->data, t.nbytes)) << label << ": " << t.name << " differs";
    matrices += t.dims.size() >= 2 ? 1 : 0;
  }
  EXPECT_GT(matrices, 0) << label;
}

void expect_llama_quantize_bytes(const fs::path& folder, const std::vector<std::string>& types) {
  const testing::TempDir dir("fsq-cli-export-nearest");
  const fs::path f32 = dir / "f32.gguf";
  RunResult src = run_fsq({"export", "--format", "gguf", "--type", "F32", "--progress", "off", folder.string(),
                           f32.string()});
  ASSERT_EQ(src.exit_code, 0) << src.err;
  for (const std::string& type : types) {
    const fs::path ours = dir / ("fsq-" + type + ".gguf"), theirs = dir / ("llama-" + type + ".gguf");
    RunResult r = run_fsq({"export", "--format", "gguf", "--type", type, "--pure", "--rounding", "nearest",
                           "--threads", "2", "--progress", "off", folder.string(), ours.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto [rc, log] = shell("'" + std::string(std::getenv("FSQ_LLAMA_CPP_BIN")) + "/llama-quantize' --pure '" +
                           f32.string() + "' '" + theirs.string() + "' " + type + " 1");
    ASSERT_EQ(rc, 0) << log;
    expect_same_tensors(ours, theirs, folder.filename().string() + " " + type);
  }
}

TEST(CliExportNearest, Stories260kBlocksAreLlamaQuantizesBytes) {
  FSQ_REQUIRE_SHARED("models/stories260K/model.safetensors");
  FSQ_REQUIRE_LLAMA_CPP();
  expect_llama_quantize_bytes(testing::stories260k_dir(), {"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"});
}

TEST(CliExportNearest, Smollm2Q4_0BlocksAreLlamaQuantizesBytes) {
  FSQ_REQUIRE_SMOLLM2_HF();
  FSQ_REQUIRE_LLAMA_CPP();
  expect_llama_quantize_bytes(testing::smollm2_hf(), {"Q4_0"});
}

TEST(CliExportNearest, RefusesImportanceWeightsInOneLine) {
  FSQ_REQUIRE_SHARED("models/stories260K/model.safetensors");
  const testing::TempDir dir("fsq-cli-export-nearest-bad");
  const fs::path calib = dir / "calib.safetensors";
  std::ofstream(calib) << "not read";
  RunResult r = run_fsq({"export", "--format", "gguf", "--type", "Q4_0", "--rounding", "nearest", "--calib",
                         calib.string(), "--progress", "off", testing::stories260k_dir().string(),
                         (dir / "out.gguf").string()});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("--rounding nearest"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out.gguf"));
}

}  // namespace
}  // namespace fsq::clitest
