// A CLI11 check for options that take widths (quantize --bits/--head-bits, plan --bits,
// --kv-bits, --quality-of): every string is read by fsq::parse_width (common/widths.h), the
// parser plan files' widths go through too, before CLI11 converts it; a width the command does
// not take (a method's or the planner's set) is refused after that, by the command.
#pragma once

#include <CLI/CLI.hpp>

#include "common/error.h"
#include "common/widths.h"

namespace fsq::cli {

inline CLI::Validator width_check() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          parse_width(text, "");
        } catch (const Error& e) {
          return e.what();
        }
        return {};
      },
      "WIDTH", "width");
}

}  // namespace fsq::cli
