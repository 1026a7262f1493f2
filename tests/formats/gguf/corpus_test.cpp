// The committed fuzz seed corpus (tests/fuzz/corpus) stays valid: every seed opens, so
// the fuzzers start from inputs that reach deep into the readers.
#include <gtest/gtest.h>

#include <filesystem>

#include "formats/gguf/dequantize.h"
#include "formats/gguf/gguf_reader.h"
#include "formats/safetensors.h"

namespace fsq::test {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(FSQ_SOURCE_DIR) / "tests" / "fuzz" / "corpus";
constexpr uintmax_t kMaxSeedBytes = 4096;

std::vector<fs::path> seeds(const std::string& kind) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(kCorpus / kind)) out.push_back(e.path());
  return out;
}

TEST(FuzzCorpus, GgufSeedsOpenAndDequantize) {
  auto files = seeds("gguf");
  EXPECT_GE(files.size(), 3u);
  for (const auto& p : files) {
    EXPECT_LE(fs::file_size(p), kMaxSeedBytes) << p;
    auto g = GgufFile::open(p);
    std::vector<float> buf;
    for (const auto& t : g->tensors()) {
      if (!can_dequantize(t.type)) continue;
      buf.resize(static_cast<size_t>(t.n_elements));
      dequantize_row(t.type, t.data, buf.data(), t.n_elements);
    }
  }
}

TEST(FuzzCorpus, SafetensorsSeedsOpen) {
  auto files = seeds("safetensors");
  EXPECT_GE(files.size(), 3u);
  for (const auto& p : files) {
    EXPECT_LE(fs::file_size(p), kMaxSeedBytes) << p;
    EXPECT_NO_THROW(SafetensorsFile::open(p)) << p;
  }
}

}  // namespace
}  // namespace fsq::test
