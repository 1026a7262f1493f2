// The dequantizers against an independent implementation: tests/formats/gguf/data/
// dequant_golden.gguf holds random ggml blocks and gguf-py's dequantization of them
// (written by make_golden.py with gguf-py's own GGUFWriter, so this also reads a file
// from a third-party writer). The float math is the same sequence, so results must be
// bit-identical.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "formats/gguf/dequantize.h"
#include "formats/gguf/gguf_reader.h"

namespace fsq::test {
namespace {

namespace fs = std::filesystem;

const fs::path kGolden = fs::path(FSQ_SOURCE_DIR) / "tests" / "formats" / "gguf" / "data" / "dequant_golden.gguf";
const std::string kSuffix = ".expected";

TEST(DequantizeGolden, MatchesGgufPyBitForBit) {
  auto g = GgufFile::open(kGolden);
  EXPECT_EQ(g->get_string("general.architecture"), "golden");
  int checked = 0;
  for (const auto& t : g->tensors()) {
    if (t.name.size() > kSuffix.size() && t.name.ends_with(kSuffix)) continue;
    SCOPED_TRACE(t.name);
    EXPECT_EQ(ggml_type_name(t.type), t.name);
    const GgufTensorInfo* want = g->find_tensor(t.name + kSuffix);
    ASSERT_NE(want, nullptr);
    ASSERT_EQ(want->type, GgmlType::F32);
    ASSERT_EQ(want->n_elements, t.n_elements);
    std::vector<float> got(static_cast<size_t>(t.n_elements)), exp(got.size());
    dequantize_row(t.type, t.data, got.data(), t.n_elements);
    std::memcpy(exp.data(), want->data, want->nbytes);
    int64_t mismatches = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::memcmp(&got[i], &exp[i], sizeof(float)) != 0 && ++mismatches <= 5)
        ADD_FAILURE() << "element " << i << ": got " << got[i] << ", gguf-py " << exp[i];
    }
    EXPECT_EQ(mismatches, 0);
    ++checked;
  }
  EXPECT_EQ(checked, 12);  // the 10 block types + F16 + BF16
}

}  // namespace
}  // namespace fsq::test
