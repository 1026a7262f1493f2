// What this fsq binary is: version, git commit and build type, fixed at configure time
// (cmake/build_info.cmake generates the definitions from build_info.cpp.in).
#pragma once

#include <string>

namespace fsq::cli {

std::string version();     // "0.1.0"
std::string commit();      // short git hash, or "unknown" outside a git checkout
std::string build_type();  // "Release", "Debug", ...

}  // namespace fsq::cli
