// Valid hand-built GGUF files read back: every metadata type (nested arrays included),
// typed getters and their errors, tensor infos and data, alignment, versions 2 and 3.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <span>

#include "common/error.h"
#include "formats/gguf/dequantize.h"
#include "formats/gguf/gguf_reader.h"
#include "gguf_builder.h"

namespace fsq::test {
namespace {

// A Q8_0 block: f16 scale 0.5 (0x3800) and codes -16..15.
std::string q8_0_block() {
  std::string b = le<uint16_t>(0x3800);
  for (int i = 0; i < 32; ++i) b += static_cast<char>(static_cast<int8_t>(i - 16));
  return b;
}

std::string f32s(const std::vector<float>& v) {
  std::string s;
  for (float x : v) s += le<float>(x);
  return s;
}

// Every value type once, a string array, and a nested array of arrays.
GgufBuilder every_type() {
  GgufBuilder b;
  b.kv("general.architecture", kStr, gstr("llama"))
      .kv("u8", kU8, le<uint8_t>(200))
      .kv("i8", kI8, le<int8_t>(-100))
      .kv("u16", kU16, le<uint16_t>(60000))
      .kv("i16", kI16, le<int16_t>(-30000))
      .kv("u32", kU32, le<uint32_t>(4000000000u))
      .kv("i32", kI32, le<int32_t>(-2000000000))
      .kv("f32", kF32, le<float>(1e-5f))
      .kv("yes", kBool, le<uint8_t>(1))
      .kv("no", kBool, le<uint8_t>(0))
      .kv("u64", kU64, le<uint64_t>(1ull << 60))
      .kv("i64", kI64, le<int64_t>(-(1ll << 60)))
      .kv("f64", kF64, le<double>(100000.0))
      .kv("empty", kStr, gstr(""))
      .kv("tokens", kArr, garr(kStr, 3, gstr("<s>") + gstr("") + gstr("h\xc3\xa9")))
      .kv("scores", kArr, garr(kF32, 2, le<float>(-1.5f) + le<float>(2.0f)))
      .kv("types", kArr, garr(kI32, 3, le<int32_t>(1) + le<int32_t>(-2) + le<int32_t>(3)))
      .kv("flags", kArr, garr(kBool, 2, std::string("\x01\x00", 2)))
      .kv("nested", kArr,
          garr(kArr, 2, garr(kU16, 2, le<uint16_t>(7) + le<uint16_t>(8)) + garr(kStr, 1, gstr("deep"))))
      .kv("none", kArr, garr(kU64, 0, ""))
      .kv("big", kU64, le<uint64_t>(1ull << 63));
  b.tensor("embed.weight", {4, 2}, kGgmlF32, f32s({0, 1, 2, 3, 4, 5, 6, 7.5f}));
  b.tensor("blk.0.w", {64, 1}, kGgmlQ8_0, q8_0_block() + q8_0_block());
  return b;
}

std::shared_ptr<const GgufFile> open_built(const GgufBuilder& b, TempFile& f) {
  return GgufFile::open(f.write(b.bytes()));
}

TEST(GgufReader, EveryMetadataTypeRoundTrips) {
  TempFile f("model.gguf");
  auto g = open_built(every_type(), f);
  EXPECT_EQ(g->version(), 3u);
  EXPECT_EQ(g->metadata().size(), 21u);
  EXPECT_EQ(g->metadata()[4].first, "i16");  // file order kept
  EXPECT_EQ(g->get_string("general.architecture"), "llama");
  EXPECT_EQ(g->require_string("general.architecture"), "llama");
  EXPECT_EQ(g->get_u64("u8"), 200u);
  EXPECT_EQ(g->get_i64("i8"), -100);
  EXPECT_EQ(g->get_u64("u16"), 60000u);
  EXPECT_EQ(g->get_i64("i16"), -30000);
  EXPECT_EQ(g->get_u64("u32"), 4000000000u);
  EXPECT_EQ(g->get_i64("i32"), -2000000000);
  EXPECT_EQ(g->get_f64("f32"), static_cast<double>(1e-5f));
  EXPECT_TRUE(g->get_bool("yes"));
  EXPECT_FALSE(g->get_bool("no"));
  EXPECT_EQ(g->get_u64("u64"), 1ull << 60);
  EXPECT_EQ(g->get_i64("i64"), -(1ll << 60));
  EXPECT_EQ(g->get_f64("f64"), 100000.0);
  EXPECT_EQ(g->get_f64("u32"), 4000000000.0);  // integers widen to f64
  EXPECT_EQ(g->get_string("empty"), "");
  // Exact variant alternatives, not just conversions.
  EXPECT_EQ(std::get<uint8_t>(g->find("u8")->v), 200);
  EXPECT_EQ(std::get<int16_t>(g->find("i16")->v), -30000);
  EXPECT_EQ(g->find("f32")->type(), GgufType::FLOAT32);
  EXPECT_EQ(g->find("nested")->type(), GgufType::ARRAY);
  EXPECT_EQ(g->find("absent"), nullptr);

  EXPECT_EQ(g->get_strings("tokens"), (std::vector<std::string>{"<s>", "", "h\xc3\xa9"}));
  EXPECT_EQ(g->get_f64s("scores"), (std::vector<double>{-1.5, 2.0}));
  EXPECT_EQ(g->get_i64s("types"), (std::vector<int64_t>{1, -2, 3}));
  const GgufArray& flags = g->get_array("flags");
  EXPECT_EQ(flags.type(), GgufType::BOOL);
  EXPECT_TRUE(flags.get_bool(0));
  EXPECT_FALSE(flags.get_bool(1));
  const GgufArray& nested = g->get_array("nested");
  ASSERT_EQ(nested.type(), GgufType::ARRAY);
  ASSERT_EQ(nested.size(), 2u);
  EXPECT_EQ(nested.get_array(0).type(), GgufType::UINT16);
  EXPECT_EQ(nested.get_array(0).to_i64(), (std::vector<int64_t>{7, 8}));
  EXPECT_EQ(nested.get_array(1).get_string(0), "deep");
  EXPECT_EQ(g->get_array("none").size(), 0u);
  EXPECT_EQ(g->get_array("none").type(), GgufType::UINT64);
}

TEST(GgufReader, TensorsRoundTrip) {
  TempFile f("model.gguf");
  auto g = open_built(every_type(), f);
  ASSERT_EQ(g->tensors().size(), 2u);
  EXPECT_EQ(g->alignment(), 32u);
  EXPECT_EQ(g->data_offset() % 32, 0u);

  const GgufTensorInfo* e = g->find_tensor("embed.weight");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e, &g->tensors()[0]);
  EXPECT_EQ(e->type, GgmlType::F32);
  EXPECT_EQ(e->dims, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(e->shape(), (std::vector<int64_t>{2, 4}));  // row-major: 2 rows of 4
  EXPECT_EQ(e->n_elements, 8);
  EXPECT_EQ(e->nbytes, 32u);
  EXPECT_EQ(e->offset, 0u);
  std::vector<float> out(8);
  dequantize_row(e->type, e->data, out.data(), 8);
  EXPECT_EQ(out, (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7.5f}));

  const GgufTensorInfo* q = g->find_tensor("blk.0.w");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->type, GgmlType::Q8_0);
  EXPECT_EQ(q->n_elements, 64);
  EXPECT_EQ(q->nbytes, 68u);
  EXPECT_EQ(q->offset, 32u);  // 32 bytes of F32 then the next aligned offset
  std::vector<float> deq(64);
  dequantize_row(q->type, q->data, deq.data(), 64);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(deq[i], 0.5f * static_cast<float>(i % 32 - 16)) << i;
  EXPECT_EQ(g->find_tensor("output.weight"), nullptr);
}

TEST(GgufReader, OpenBytesMatchesOpen) {
  std::string bytes = every_type().bytes();
  auto g = GgufFile::open_bytes("mem", std::as_bytes(std::span<const char>(bytes.data(), bytes.size())));
  EXPECT_EQ(g->name(), "mem");
  EXPECT_EQ(g->tensors().size(), 2u);
  EXPECT_EQ(g->get_strings("tokens").size(), 3u);
}

TEST(GgufReader, VersionTwoAndCustomAlignment) {
  GgufBuilder b;
  b.version = 2;
  b.alignment = 64;
  b.kv("general.alignment", kU32, le<uint32_t>(64));
  b.tensor("a", {3}, kGgmlF32, f32s({1, 2, 3}));
  b.tensor("b", {1}, kGgmlF32, f32s({4}));
  TempFile f("v2.gguf");
  auto g = open_built(b, f);
  EXPECT_EQ(g->version(), 2u);
  EXPECT_EQ(g->alignment(), 64u);
  EXPECT_EQ(g->data_offset() % 64, 0u);
  EXPECT_EQ(g->find_tensor("b")->offset, 64u);
}

TEST(GgufReader, NoTensorsAndDeepestAllowedNesting) {
  std::string v = garr(kU8, 1, "\x05");
  for (int i = 1; i < 8; ++i) v = garr(kArr, 1, v);
  GgufBuilder b;
  b.kv("n", kArr, v);
  TempFile f("meta.gguf");
  auto g = open_built(b, f);
  EXPECT_TRUE(g->tensors().empty());
  const GgufArray* a = &g->get_array("n");
  for (int i = 1; i < 8; ++i) a = &a->get_array(0);
  EXPECT_EQ(a->get_u64(0), 5u);
}

// Getter errors: one line naming the file and the key (the GGUF -> model step relies on it).
void expect_getter_error(const std::function<void()>& get, const std::string& expected) {
  try {
    get();
    ADD_FAILURE() << "no error, expected " << expected;
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_NE(msg.find("model.gguf: "), std::string::npos) << msg;
    EXPECT_NE(msg.find(expected), std::string::npos) << "expected '" << expected << "' in: " << msg;
  }
}

TEST(GgufReader, GetterErrorsNameFileAndKey) {
  GgufBuilder b = every_type();
  TempFile f("model.gguf");
  auto g = open_built(b, f);
  expect_getter_error([&] { g->require_string("general.name"); }, "missing key 'general.name'");
  expect_getter_error([&] { g->get_u64("llama.block_count"); }, "missing key 'llama.block_count'");
  expect_getter_error([&] { g->get_string("u32"); }, "key 'u32' has type UINT32, expected STRING");
  expect_getter_error([&] { g->get_u64("i8"); }, "key 'i8' is negative (-100)");
  expect_getter_error([&] { g->get_i64("f32"); }, "key 'f32' has type FLOAT32, expected an integer");
  expect_getter_error([&] { g->get_i64("big"); }, "key 'big' value 9223372036854775808 does not fit i64");
  expect_getter_error([&] { g->get_bool("u8"); }, "key 'u8' has type UINT8, expected BOOL");
  expect_getter_error([&] { g->get_f64("yes"); }, "key 'yes' has type BOOL, expected a number");
  expect_getter_error([&] { g->get_array("u8"); }, "key 'u8' has type UINT8, expected ARRAY");
  expect_getter_error([&] { g->get_strings("scores"); }, "key 'scores' is an array of FLOAT32, expected an array of STRING");
  expect_getter_error([&] { g->get_i64s("tokens"); }, "key 'tokens': ");
}

}  // namespace
}  // namespace fsq::test
