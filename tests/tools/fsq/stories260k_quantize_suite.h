// A test suite that runs `fsq quantize` on stories260K with calibration text from the tail
// of tinystories_val (the evaluations read its head), all in one temporary folder that
// lives as long as the suite.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli_support.h"

namespace fsq::clitest {

class Stories260kQuantizeSuite : public ::testing::Test {
 protected:
  // The last kCalibBytes of tinystories_val: never the evaluated windows (its first 32 x 256 tokens).
  static constexpr size_t kCalibBytes = 200'000;

  static void SetUpTestSuite();
  static void TearDownTestSuite();
  // fsq quantize of stories260K into `out`: 16 calibration windows of 256 tokens, one thread,
  // no progress bar, then `options` (the method and its flags).
  static RunResult quantize(const std::filesystem::path& out, const std::vector<std::string>& options);

  static std::filesystem::path dir_;
};

}  // namespace fsq::clitest
