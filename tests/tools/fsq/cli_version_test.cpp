// fsq --version: version, git commit and build type, as CMake found them at configure time
// (cmake/build_info.cmake passes the same values to this file), the commit being HEAD's.
#include <gtest/gtest.h>

#include <cstdio>
#include <regex>

#include "cli_support.h"

namespace fsq::clitest {
namespace {

// HEAD's full hash, or "" when git or the checkout is not there.
std::string git_head() {
  FILE* p = ::popen("git -C '" FSQ_SOURCE_DIR "' rev-parse HEAD 2>/dev/null", "r");
  if (p == nullptr) return "";
  char buf[128] = {};
  const bool got = std::fgets(buf, sizeof buf, p) != nullptr;
  ::pclose(p);
  std::string head = got ? buf : "";
  while (!head.empty() && (head.back() == '\n' || head.back() == '\r')) head.pop_back();
  return head;
}

TEST(CliVersion, PrintsVersionCommitAndBuildType) {
  RunResult r = run_fsq({"--version"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "fsq " FSQ_EXPECTED_VERSION " (commit " FSQ_EXPECTED_COMMIT ", " FSQ_EXPECTED_BUILD_TYPE " build)\n");
  EXPECT_EQ(r.err, "");
  const std::string commit = FSQ_EXPECTED_COMMIT, head = git_head();
  if (head.empty()) {
    EXPECT_EQ(commit, "unknown");  // built outside a git checkout
  } else {
    EXPECT_TRUE(std::regex_match(commit, std::regex("[0-9a-f]{7,40}"))) << commit;
    EXPECT_EQ(head.rfind(commit, 0), 0u) << "fsq reports commit " << commit << ", the checkout is at " << head
                                         << " (rebuild after committing)";
  }
}

}  // namespace
}  // namespace fsq::clitest
