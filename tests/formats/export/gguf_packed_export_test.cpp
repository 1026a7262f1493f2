// fsq export --format gguf of a packed checkpoint: linears on llama.cpp's grids keep their
// codes and scales, so the GGUF's blocks decode (fsq's dequantize_row, which mirrors
// llama.cpp's) to exactly fsq's own dequantization of the checkpoint; for Q4_1 exactly
// where m = -zero*scale is an fp16 and by exactly the rounding of m elsewhere. Other grids
// are refused in one line naming the linear.
#include <gtest/gtest.h>

#include <cmath>

#include "common/half.h"
#include "export_test_support.h"
#include "formats/export/gguf_export.h"
#include "formats/export/gguf_hf_names.h"
#include "formats/export/gguf_packed_source.h"
#include "formats/gguf/dequantize.h"
#include "formats/gguf/gguf_reader.h"
#include "temp_dir.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;
using test::SmallModelSource;

constexpr int64_t kHeadDim = 8;  // llama_config(): hidden 64 over 8 heads

struct Exported {
  testing::TempDir dir;  // first, so that it is removed after the file is unmapped
  std::shared_ptr<const GgufFile> gguf;
  std::vector<std::string> notes;
};

Exported export_packed(SmallModelSource& src, GgufRecipe recipe, const std::string& tag) {
  Exported e{testing::TempDir("fsq-gguf-packed-" + tag), nullptr, {}};
  src.write(e.dir / "packed");
  PackedGgufSource source(e.dir / "packed");
  GgufExportOptions options;
  export_gguf(source, plan_gguf_export(source, recipe, false), e.dir / "out.gguf", options);
  e.gguf = GgufFile::open(e.dir / "out.gguf");
  e.notes = source.notes();
  return e;
}

// The GGUF tensor of HF linear `name` decoded by fsq's reference dequantizer, rows back in
// HF order.
std::vector<float> decoded_in_hf_order(const GgufFile& g, const std::string& gguf_name, bool permuted) {
  const GgufTensorInfo* t = g.find_tensor(gguf_name);
  EXPECT_NE(t, nullptr) << gguf_name;
  std::vector<float> rows(static_cast<size_t>(t->n_elements)), out(rows.size());
  dequantize_row(t->type, t->data, rows.data(), t->n_elements);
  const int64_t cols = t->dims[0], n = t->n_elements / cols;
  for (int64_t r = 0; r < n; ++r) {
    const int64_t hf = permuted ? hf_row_of_gguf_row(r, kHeadDim) : r;
    std::copy_n(rows.begin() + r * cols, cols, out.begin() + hf * cols);
  }
  return out;
}

struct GridCase {
  const char* quant_type;
  GgmlType gguf_type;
};

void PrintTo(const GridCase& c, std::ostream* os) { *os << c.quant_type; }

class GgufPackedExport : public ::testing::TestWithParam<GridCase> {};

TEST_P(GgufPackedExport, BlocksDecodeToFsqsDequantization) {
  SmallModelSource src(GetParam().quant_type);
  const Exported e = export_packed(src, GgufRecipe::F32, GetParam().quant_type);
  const PackedCheckpoint packed = PackedCheckpoint::open(e.dir / "packed");
  const ArchSpec& arch = arch_spec_for("LlamaForCausalLM");
  int64_t rounded_groups = 0;
  for (const PackedLinear& l : packed.linears()) {
    const LinearSpec* spec = nullptr;
    const std::string name = gguf_name_of_hf(arch, l.name + ".weight", &spec);
    ASSERT_EQ(e.gguf->find_tensor(name)->type, GetParam().gguf_type) << name;
    const std::vector<float> got = decoded_in_hf_order(*e.gguf, name, spec->rotary_output);
    const std::vector<float> want = dequantize_linear(l);
    const QuantizedMatrix m = unpack_linear(l);
    for (int64_t r = 0; r < l.rows; ++r)
      for (int64_t g = 0; g < m.groups(); ++g) {
        // Q4_1's m rounded to fp16 moves the whole group by exactly its rounding.
        float shift = 0;
        if (!m.zeros.empty()) {
          const float offset = -static_cast<float>(m.zeros[r * m.groups() + g]) * f16_to_f32(m.scales[r * m.groups() + g]);
          shift = f16_to_f32(f32_to_f16(offset)) - offset;
          rounded_groups += shift != 0 ? 1 : 0;
        }
        for (int64_t j = g * 32; j < (g + 1) * 32; ++j) {
          const size_t i = static_cast<size_t>(r * l.cols + j);
          ASSERT_EQ(got[i], want[i] + shift) << name << " row " << r << " column " << j;
        }
      }
  }
  if (GetParam().gguf_type == GgmlType::Q4_1) {
    EXPECT_GT(rounded_groups, 0) << "the fixture should exercise a rounded m";
    ASSERT_FALSE(e.notes.empty());
    EXPECT_NE(e.notes.back().find("rounded in " + std::to_string(rounded_groups) + " of"), std::string::npos)
        << e.notes.back();
  } else {
    EXPECT_TRUE(e.notes.empty());
  }
  // Dense tensors go through --type F32 exactly; the q bias is permuted like q's rows.
  const std::vector<float> bias = decoded_in_hf_order(*e.gguf, "blk.0.attn_q.bias", false);
  const TensorView* hf_bias = packed.weights().find("model.layers.0.self_attn.q_proj.bias");
  for (int64_t i = 0; i < 64; ++i) {
    uint16_t h;
    std::memcpy(&h, hf_bias->data + 2 * hf_row_of_gguf_row(i, kHeadDim), 2);
    ASSERT_EQ(bias[static_cast<size_t>(i)], f16_to_f32(h)) << i;
  }
  EXPECT_EQ(e.gguf->find_tensor("blk.0.ffn_down.weight")->type, GgmlType::F32);
  EXPECT_EQ(e.gguf->find_tensor("output.weight")->type, GgmlType::F32);
}

INSTANTIATE_TEST_SUITE_P(Grids, GgufPackedExport,
                         ::testing::Values(GridCase{"w4g32s", GgmlType::Q4_0}, GridCase{"w8g32s", GgmlType::Q8_0},
                                           GridCase{"w4g32a", GgmlType::Q4_1}),
                         [](const auto& info) { return std::string(info.param.quant_type); });

TEST(GgufPackedExport, OtherGridsAreRefusedNamingTheLinear) {
  for (const char* type : {"w4g128a", "w4g64s", "w3g32s", "w8g32a", "w2g32s"}) {
    SmallModelSource src(type);
    const testing::TempDir tmp_scratch("fsq-gguf-packed-refused");
    const auto& tmp = tmp_scratch.path();
    test::expect_export_refused([&](const PackedCheckpoint&) { PackedGgufSource source(tmp / "packed"); }, src, tmp,
                                tmp / "packed",
                                std::string("model.layers.0.mlp.up_proj is ") + type +
                                    "; GGUF export carries w4g32s (Q4_0), w4g32a (Q4_1) and w8g32s (Q8_0)");
  }
}

// An embedding or head quantized on another grid (fsq quantize --head-bits 8 gives w8g64s)
// is decoded as fsq decodes it and typed by --type like a dense tensor.
TEST(GgufPackedExport, HeadOnAnotherGridIsDecodedThenTyped) {
  SmallModelSource src("w4g32s");
  src.quantize_head("lm_head", "w8g64s");
  const Exported e = export_packed(src, GgufRecipe::F32, "head");
  const PackedCheckpoint packed = PackedCheckpoint::open(e.dir / "packed");
  const GgufTensorInfo* head = e.gguf->find_tensor("output.weight");
  ASSERT_EQ(head->type, GgmlType::F32);
  const std::vector<float> want = dequantize_linear(*packed.find_head_matrix("lm_head"));
  ASSERT_EQ(std::memcmp(head->data, want.data(), want.size() * 4), 0);
  ASSERT_FALSE(e.notes.empty());
  EXPECT_NE(e.notes.front().find("lm_head is w8g64s"), std::string::npos) << e.notes.front();
}

}  // namespace
}  // namespace fsq
