// fixtures.h: when a missing fixture fails a test (CI) and when it skips it.
#include "fixtures.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "temp_dir.h"

namespace fsq::testing {
namespace {

// Sets or clears CI for one test and puts the original value back afterwards.
class CiVariable : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* v = std::getenv("CI")) saved_ = v;
  }
  void TearDown() override {
    if (saved_)
      setenv("CI", saved_->c_str(), 1);
    else
      unsetenv("CI");
  }
  static bool failure_with(const char* value) {
    if (value)
      setenv("CI", value, 1);
    else
      unsetenv("CI");
    return fixture_missing_is_failure();
  }
  std::optional<std::string> saved_;
};

TEST_F(CiVariable, UnsetEmptyZeroOrFalseSkip) {
  EXPECT_FALSE(failure_with(nullptr));
  EXPECT_FALSE(failure_with(""));
  EXPECT_FALSE(failure_with("0"));
  EXPECT_FALSE(failure_with("false"));
  EXPECT_FALSE(failure_with("FALSE"));
  EXPECT_FALSE(failure_with("False"));
}

TEST_F(CiVariable, AnyOtherValueFails) {
  EXPECT_TRUE(failure_with("true"));
  EXPECT_TRUE(failure_with("1"));
  EXPECT_TRUE(failure_with("yes"));
  EXPECT_TRUE(failure_with("TRUE"));
}

// A present fixture lets the test go on, CI or not.
TEST_F(CiVariable, PresentFixtureContinues) {
  TempDir dir("fsq-fixtures-test");
  bool reached = false;
  auto require = [&] {
    FSQ_REQUIRE_FIXTURE(dir.path(), "made by this test");
    reached = true;
  };
  failure_with("true");
  require();
  EXPECT_TRUE(reached);
  reached = false;
  failure_with(nullptr);
  require();
  EXPECT_TRUE(reached);
}

}  // namespace
}  // namespace fsq::testing
