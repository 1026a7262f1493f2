// Table of malformed GGUF files, each built as bytes here. Every case must throw
// fsq::Error whose message is one line, names the file, and says what is wrong; the
// in-memory entry point (used by the fuzzer) must say the same.
#include <gtest/gtest.h>

#include <functional>
#include <span>

#include "common/error.h"
#include "formats/gguf/gguf_reader.h"
#include "gguf_builder.h"

namespace fsq::test {
namespace {

struct Case {
  const char* name;
  std::function<std::string()> bytes;
  const char* expected;  // must appear in the message
};

// A builder with one valid key already in, so later defects are past the header.
GgufBuilder base() {
  GgufBuilder b;
  b.kv("general.architecture", kStr, gstr("llama"));
  return b;
}

std::string f32_bytes(size_t n) { return std::string(4 * n, '\0'); }

// An array value nested `depth` levels deep around one UINT8 array.
std::string nested(int depth) {
  std::string v = garr(kU8, 1, "\x01");
  for (int i = 1; i < depth; ++i) v = garr(kArr, 1, v);
  return v;
}

std::vector<Case> cases() {
  return {
      // --- header ---
      {"EmptyFile", [] { return std::string(); }, "not a GGUF file"},
      {"BadMagic", [] { auto b = base(); b.magic = "GGML"; return b.bytes(); }, "not a GGUF file"},
      {"VersionOne", [] { auto b = base(); b.version = 1; return b.bytes(); }, "unsupported GGUF version 1 "},
      {"VersionFour", [] { auto b = base(); b.version = 4; return b.bytes(); }, "unsupported GGUF version 4 "},
      {"BigEndianFile", [] { auto b = base(); b.version = 0x03000000; return b.bytes(); }, "big-endian"},
      {"TruncatedHeader", [] { return std::string("GGUF\x03\x00\x00\x00\x01\x00", 10); },
       "truncated while reading the tensor count"},
      {"TensorCountBeyondFile", [] { auto b = base(); b.n_tensors_override = 1'000'000; return b.bytes(); },
       "tensor count 1000000 exceeds what the file can hold"},
      {"TensorCountMaxU64", [] { auto b = base(); b.n_tensors_override = INT64_MAX; return b.bytes(); },
       "exceeds what the file can hold"},
      {"MetadataCountBeyondFile", [] { auto b = base(); b.n_kv_override = 1000; return b.bytes(); },
       "metadata count 1000 exceeds what the file can hold"},
      {"TruncatedInValue", [] { return base().bytes().substr(0, 60); }, "truncated while reading string"},
      // --- metadata ---
      {"KeyLengthBeyondFile", [] { return base().raw_kv(le<uint64_t>(1000) + "abc").bytes(); },
       "metadata key length 1000"},
      {"StringLengthBeyondFile", [] { return base().kv("s", kStr, le<uint64_t>(1ull << 40) + "abc").bytes(); },
       "string length 1099511627776"},
      {"StringLengthMaxU64", [] { return base().kv("s", kStr, le<uint64_t>(~0ull)).bytes(); },
       "exceeds the file"},
      {"ArrayLengthBeyondFile", [] { return base().kv("a", kArr, garr(kU32, 1000, le<uint32_t>(1))).bytes(); },
       "key 'a': array length 1000 exceeds the file"},
      {"StringArrayLengthBeyondFile",
       [] { return base().kv("t", kArr, garr(kStr, 1ull << 60, gstr("x"))).bytes(); }, "key 't': array length"},
      {"ArrayOfUnknownType", [] { return base().kv("a", kArr, garr(13, 1, "x")).bytes(); },
       "key 'a': array of unknown element type 13"},
      {"UnknownValueType", [] { return base().raw_kv(gstr("k") + le<uint32_t>(99) + "xxxx").bytes(); },
       "key 'k': unknown value type 99"},
      {"BoolNotZeroOrOne", [] { return base().kv("b", kBool, "\x02").bytes(); }, "key 'b': BOOL value 2"},
      {"BoolArrayNotZeroOrOne", [] { return base().kv("b", kArr, garr(kBool, 2, "\x01\x07")).bytes(); },
       "BOOL value 7"},
      {"ArraysNestedTooDeep", [] { return base().kv("n", kArr, nested(9)).bytes(); }, "nested deeper than 8"},
      {"DuplicateMetadataKey", [] { return base().kv("general.architecture", kStr, gstr("x")).bytes(); },
       "duplicate metadata key 'general.architecture'"},
      {"AlignmentNotPowerOfTwo", [] { return base().kv("general.alignment", kU32, le<uint32_t>(24)).bytes(); },
       "general.alignment 24 is not a power of two"},
      {"AlignmentZero", [] { return base().kv("general.alignment", kU32, le<uint32_t>(0)).bytes(); },
       "general.alignment 0 is not a power of two"},
      {"AlignmentWrongType", [] { return base().kv("general.alignment", kU64, le<uint64_t>(32)).bytes(); },
       "key 'general.alignment' has type UINT64, expected UINT32"},
      // --- tensor infos ---
      {"TooManyDims", [] { return base().tensor("w", {1, 1, 1, 1, 1}, kGgmlF32, f32_bytes(1)).bytes(); },
       "tensor 'w': 5 dimensions (at most 4)"},
      {"DimensionOverflow",
       [] { return base().info("w", {1ull << 32, 1ull << 32}, kGgmlF32, 0).bytes(); },
       "tensor 'w': element count overflows"},
      {"DimensionOutOfRange", [] { return base().info("w", {1ull << 63}, kGgmlF32, 0).bytes(); },
       "tensor 'w': dimension 0 is 9223372036854775808, out of range"},
      {"ByteSizeOverflow", [] { return base().info("w", {1ull << 62}, 28 /* F64 */, 0).bytes(); },
       "tensor 'w': byte size overflows"},
      {"UnknownGgmlType", [] { return base().tensor("w", {4}, 99, f32_bytes(4)).bytes(); },
       "tensor 'w': unknown ggml type 99"},
      {"RetiredGgmlType", [] { return base().tensor("w", {32}, 4 /* Q4_2 */, f32_bytes(8)).bytes(); },
       "unknown ggml type 4"},
      {"ShapeNotMatchingBlockSize",
       [] { return base().tensor("w", {33, 2}, kGgmlQ8_0, std::string(136, '\0')).bytes(); },
       "tensor 'w': shape not matching the block size: first dimension 33 is not a multiple of 32 (Q8_0)"},
      {"BlockTypeScalar", [] { return base().tensor("w", {}, kGgmlQ4_K, std::string(144, '\0')).bytes(); },
       "shape not matching the block size"},
      {"DuplicateTensorName",
       [] { return base().tensor("w", {4}, kGgmlF32, f32_bytes(4)).tensor("w", {4}, kGgmlF32, f32_bytes(4)).bytes(); },
       "duplicate tensor name 'w'"},
      {"TruncatedTensorInfo", [] { return base().info("w", {4}, kGgmlF32, 0).bytes().substr(0, 69 + 30); },
       "truncated while reading a tensor offset"},
      // --- data section ---
      {"MisalignedOffset", [] { auto b = base().info("w", {2}, kGgmlF32, 8); b.data() = f32_bytes(8); return b.bytes(); },
       "tensor 'w': misaligned offset 8 (alignment 32)"},
      {"OffsetBeyondFile", [] { auto b = base().info("w", {2}, kGgmlF32, 4096); b.data() = f32_bytes(8); return b.bytes(); },
       "tensor 'w': offset 4096 is beyond the end of the file"},
      {"TruncatedData",
       [] { auto b = base().tensor("w", {8}, kGgmlF32, f32_bytes(8)); b.data().resize(20); return b.bytes(); },
       "tensor 'w': truncated data (32 bytes at offset 0, data section holds 20)"},
      {"TruncatedQuantData",
       [] { auto b = base().tensor("q", {64}, kGgmlQ8_0, std::string(68, '\0')); b.data().resize(67); return b.bytes(); },
       "tensor 'q': truncated data"},
      {"OverlappingTensors",
       [] { auto b = base().info("a", {8}, kGgmlF32, 0).info("b", {8}, kGgmlF32, 0); b.data() = f32_bytes(8); return b.bytes(); },
       "overlap"},
      // --- hostile names still give one line ---
      {"NewlineInTensorName", [] { return base().tensor("a\nb", {4}, 99, f32_bytes(4)).bytes(); },
       "tensor 'a\\x0ab': unknown ggml type 99"},
  };
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class Malformed : public ::testing::TestWithParam<Case> {};

void expect_error(const std::function<void()>& open, const Case& c, const std::string& file) {
  try {
    open();
    ADD_FAILURE() << c.name << ": no error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "not one line: " << msg;
    EXPECT_NE(msg.find(file), std::string::npos) << "does not name " << file << ": " << msg;
    EXPECT_NE(msg.find(c.expected), std::string::npos) << "expected '" << c.expected << "' in: " << msg;
  }
}

TEST_P(Malformed, ThrowsOneLineNamingFileAndProblem) {
  const Case& c = GetParam();
  const std::string bytes = c.bytes();
  TempFile f("bad.gguf");
  f.write(bytes);
  expect_error([&] { GgufFile::open(f.path()); }, c, f.path().string());
  auto span = std::as_bytes(std::span<const char>(bytes.data(), bytes.size()));
  expect_error([&] { GgufFile::open_bytes("mem.gguf", span); }, c, "mem.gguf");
}

INSTANTIATE_TEST_SUITE_P(Gguf, Malformed, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(GgufMalformed, MissingFileNamesIt) {
  try {
    GgufFile::open("/nonexistent/model.gguf");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model.gguf"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fsq::test
