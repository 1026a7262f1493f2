// read_text_file: the one reader of data text (eval --data, calibrate --data, quantize
// --calib-data): missing, not a file, empty, NUL bytes and invalid UTF-8 are one-line errors
// naming the file.
#include "common/text_file.h"

#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "temp_dir.h"
#include "text_files.h"

namespace fsq {
namespace {

namespace fs = std::filesystem;

std::string error_of(const fs::path& path, EmptyText empty = EmptyText::Refuse) {
  try {
    read_text_file(path, empty);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expect_error(const fs::path& path, const std::string& problem, EmptyText empty = EmptyText::Refuse) {
  const std::string msg = error_of(path, empty);
  EXPECT_EQ(msg.rfind(path.string() + ": ", 0), 0u) << msg;
  EXPECT_NE(msg.find(problem), std::string::npos) << msg << " lacks " << problem;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

TEST(TextFile, ReadsUtf8TextWhole) {
  testing::TempDir dir;
  const std::string text = "caf\xc3\xa9\nline two\r\n\xf0\x9f\x99\x82";
  testing::write_file(dir / "t.txt", text);
  EXPECT_EQ(read_text_file(dir / "t.txt"), text);
  EXPECT_NO_THROW(check_text_file(dir / "t.txt"));
}

TEST(TextFile, MissingDirectoryAndEmptyAreRefused) {
  testing::TempDir dir;
  expect_error(dir / "missing.txt", "does not exist or is not a regular file");
  expect_error(dir.path(), "does not exist or is not a regular file");
  testing::write_file(dir / "empty.txt", "");
  expect_error(dir / "empty.txt", "is empty");
  EXPECT_THROW(check_text_file(dir / "empty.txt"), Error);
  // Calibration folders may hold empty files: allowed, it is just no text.
  EXPECT_EQ(read_text_file(dir / "empty.txt", EmptyText::Allow), "");
  EXPECT_NO_THROW(check_text_file(dir / "empty.txt", EmptyText::Allow));
  expect_error(dir / "missing.txt", "does not exist", EmptyText::Allow);
}

TEST(TextFile, BinaryIsRefusedWithTheOffset) {
  testing::TempDir dir;
  testing::write_file(dir / "nul.txt", std::string("abc\0def", 7));
  expect_error(dir / "nul.txt", "NUL byte at offset 3");
  testing::write_file(dir / "latin1.txt", "caf\xe9");
  expect_error(dir / "latin1.txt", "invalid byte at offset 3");
}

}  // namespace
}  // namespace fsq
