// Progress: the final state is drawn exactly once and reads 100 % when the work is done.
#include "common/progress.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace fsq {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

TEST(Progress, LinesModeEndsAtOneHundredPercentOnce) {
  ::testing::internal::CaptureStderr();
  {
    Progress bar("eval", 8, ProgressMode::Lines);
    for (int64_t done = 1; done <= 8; ++done) bar.update(done, "ppl 5.0");
    bar.finish("ppl 4.9");
  }
  const auto lines = lines_of(::testing::internal::GetCapturedStderr());
  // Updates within the first 5 s draw nothing in lines mode; finish() draws the end state.
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("100% 8/8"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("ppl 4.9"), std::string::npos) << lines[0];
}

TEST(Progress, BarModeEndsAtOneHundredPercentWithANewline) {
  ::testing::internal::CaptureStderr();
  {
    Progress bar("quantize", 3, ProgressMode::Bar);
    for (int64_t done = 1; done <= 3; ++done) bar.update(done);
    bar.finish();
  }
  const std::string out = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.back(), '\n');
  const std::string last = out.substr(out.rfind('\r') + 1);
  EXPECT_NE(last.find("100% 3/3"), std::string::npos) << last;
}

TEST(Progress, DestructorFinishesAnUnfinishedBar) {
  ::testing::internal::CaptureStderr();
  { Progress bar("calibrate", 4, ProgressMode::Lines); bar.update(2); }
  const auto lines = lines_of(::testing::internal::GetCapturedStderr());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find(" 50% 2/4"), std::string::npos) << lines[0];
}

TEST(Progress, OffModeWritesNothing) {
  ::testing::internal::CaptureStderr();
  {
    Progress bar("eval", 2, ProgressMode::Off);
    bar.update(2);
    bar.finish("done");
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

}  // namespace
}  // namespace fsq
