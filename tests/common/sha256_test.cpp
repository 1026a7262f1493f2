// sha256 of memory and of files (read in chunks): known digests and chunk boundaries.
#include "common/sha256.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "common/error.h"
#include "temp_dir.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;

// FIPS 180-2 test vector.
constexpr const char* kAbcDigest = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

fs::path write_file(const testing::TempDir& dir, const std::string& name, const std::string& bytes) {
  const fs::path p = dir / name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

TEST(Sha256, KnownDigestOfMemoryAndFile) {
  EXPECT_EQ(sha256_hex(std::string_view("abc")), kAbcDigest);
  const testing::TempDir dir("fsq-sha");
  fs::path p = write_file(dir, "abc", "abc");
  EXPECT_EQ(sha256_file(p), kAbcDigest);
}

TEST(Sha256, FileSpanningSeveralReadChunksEqualsTheDigestOfItsBytes) {
  std::string bytes(3 * (1 << 20) + 12345, '\0');  // more than three 1 MiB read chunks
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 2654435761u) >> 13);
  const testing::TempDir dir("fsq-sha");
  fs::path p = write_file(dir, "big", bytes);
  EXPECT_EQ(sha256_file(p), sha256_hex(std::string_view(bytes)));
}

TEST(Sha256, MissingFileNamesThePath) {
  const fs::path p = fs::temp_directory_path() / "fsq-sha-no-such-file";
  try {
    sha256_file(p);
    FAIL() << "expected fsq::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fsq
