// One size parser for every option that takes a size (common/byte_size.h): decimal units as
// Hugging Face counts shard sizes, binary ones as memory is counted, one-line refusals.
#include <gtest/gtest.h>

#include <string>

#include "common/byte_size.h"
#include "common/error.h"

namespace fsq {
namespace {

TEST(ByteSize, DecimalAndBinaryUnits) {
  EXPECT_EQ(parse_byte_size("5GB", "--max-shard-size"), 5'000'000'000);
  EXPECT_EQ(parse_byte_size("500mb", "--max-shard-size"), 500'000'000);
  EXPECT_EQ(parse_byte_size("16G", "--max-memory"), int64_t{16} << 30);
  EXPECT_EQ(parse_byte_size("512MiB", "--max-memory"), int64_t{512} << 20);
  EXPECT_EQ(parse_byte_size("1.5k", "--max-memory"), 1536);
  EXPECT_EQ(parse_byte_size("4096", "--max-memory"), 4096);
  EXPECT_EQ(parse_byte_size("1e9", "--max-memory"), 1'000'000'000);
}

TEST(ByteSize, AnythingElseIsOneLineNamingTheOption) {
  for (const char* bad : {"0", "-1G", "5XB", "G", "", "5 GB", "0.1", "2e30"}) {
    try {
      parse_byte_size(bad, "--max-memory");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("--max-memory: ", 0), 0u) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace fsq
