// The byte-changing options of the methods that store uniform integer groups (rtn, awq).
#pragma once

#include <nlohmann/json.hpp>

namespace fsq {

struct QuantizeConfig;

nlohmann::json uniform_byte_options(const QuantizeConfig& config);

}  // namespace fsq
