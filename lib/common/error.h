// fsq::Error: the one exception type lib/ throws. Its message is a single line that
// names the thing at fault (a file, a tensor, an option) and the problem, so tools/ can
// print it as-is and exit non-zero.
#pragma once

#include <stdexcept>
#include <string>

namespace fsq {

class Error : public std::runtime_error {
 public:
  // where: the file/tensor/option at fault; problem: what is wrong.
  Error(const std::string& where, const std::string& problem)
      : std::runtime_error(where.empty() ? problem : where + ": " + problem) {}
  // Adds "(expected E, got G)".
  Error(const std::string& where, const std::string& problem, const std::string& expected,
        const std::string& got)
      : Error(where, problem + " (expected " + expected + ", got " + got + ")") {}
};

}  // namespace fsq
