// sha256 of memory and of files (read in chunks): known digests and chunk boundaries.
#include "common/sha256.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "common/error.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;

// FIPS 180-2 test vector.
constexpr const char* kAbcDigest = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

fs::path write_file(const std::string& name, const std::string& bytes) {
  fs::path p = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

TEST(Sha256, KnownDigestOfMemoryAndFile) {
  EXPECT_EQ(sha256_hex(std::string_view("abc")), kAbcDigest);
  fs::path p = write_file("fsq-sha-abc", "abc");
  EXPECT_EQ(sha256_file(p), kAbcDigest);
  fs::remove(p);
}

TEST(Sha256, FileSpanningSeveralReadChunksEqualsTheDigestOfItsBytes) {
  std::string bytes(3 * (1 << 20) + 12345, '\0');  // more than three 1 MiB read chunks
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 2654435761u) >> 13);
  fs::path p = write_file("fsq-sha-big", bytes);
  EXPECT_EQ(sha256_file(p), sha256_hex(std::string_view(bytes)));
  fs::remove(p);
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
