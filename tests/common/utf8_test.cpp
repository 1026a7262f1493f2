// Text checks: what is not UTF-8 text (binary files, NUL bytes) is refused with its offset.
#include "common/utf8.h"

#include <gtest/gtest.h>

#include <string>

#include "common/error.h"

namespace fsq {
namespace {

std::string utf8_error_of(std::string_view text) {
  try {
    check_text(text, "data.txt");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Utf8, FindsTheFirstInvalidByte) {
  EXPECT_EQ(find_invalid_utf8("plain ascii"), std::string_view::npos);
  EXPECT_EQ(find_invalid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82"), std::string_view::npos);
  EXPECT_EQ(find_invalid_utf8("ab\xc0\xaf"), 2u);         // overlong '/'
  EXPECT_EQ(find_invalid_utf8("abc\xed\xa0\x80"), 3u);    // UTF-16 surrogate
  EXPECT_EQ(find_invalid_utf8("a\xf4\x90\x80\x80"), 1u);  // above U+10FFFF
  EXPECT_EQ(find_invalid_utf8("abcd\xe2\x82"), 4u);       // truncated at the end
}

TEST(Utf8, CheckTextAcceptsTextAndNamesTheOffsetOfWhatIsNot) {
  EXPECT_EQ(utf8_error_of("Once upon a time, caf\xc3\xa9.\n"), "");
  const std::string nul = utf8_error_of(std::string("ELF\0\1\2", 6));
  EXPECT_NE(nul.find("data.txt"), std::string::npos) << nul;
  EXPECT_NE(nul.find("NUL byte at offset 3"), std::string::npos) << nul;
  const std::string bad = utf8_error_of("text then \xff\xfe");
  EXPECT_NE(bad.find("invalid byte at offset 10"), std::string::npos) << bad;
}

}  // namespace
}  // namespace fsq
