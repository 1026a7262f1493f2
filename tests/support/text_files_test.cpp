// text_files.h and temp_dir.h: the helpers the other suites lean on.
#include "text_files.h"

#include <gtest/gtest.h>

#include "temp_dir.h"

namespace fsq::testing {
namespace {

TEST(TextFiles, TailOfIsTheLastBytesOrTheWholeFile) {
  TempDir dir("fsq-text-files-test");
  write_file(dir / "t.txt", "0123456789");
  EXPECT_EQ(read_file(dir / "t.txt"), "0123456789");
  EXPECT_EQ(tail_of(dir / "t.txt", 3), "789");
  EXPECT_EQ(tail_of(dir / "t.txt", 100), "0123456789");
  EXPECT_EQ(tail_of(dir / "t.txt", 0), "");
  EXPECT_THROW(read_file(dir / "absent.txt"), std::runtime_error);
}

TEST(TempDirs, AreFreshAndRemovedWithTheirContents) {
  std::filesystem::path kept;
  {
    TempDir a("fsq-temp-dir-test"), b("fsq-temp-dir-test");
    EXPECT_NE(a.path(), b.path());
    EXPECT_TRUE(std::filesystem::is_empty(a.path()));
    write_file(a / "f", "x");
    kept = a.path();
  }
  EXPECT_FALSE(std::filesystem::exists(kept));
}

}  // namespace
}  // namespace fsq::testing
