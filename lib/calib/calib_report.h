// A readable summary of a calibration file (fsq inspect): per layer and linear group the
// activation range, the outlier ratio (largest channel absmax over the median channel
// absmax; real LLMs show a few channels far above the rest) with the top channels, and the
// Fisher magnitude per linear.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace fsq {

class CalibrationFile;

inline constexpr int kTopOutlierChannels = 3;

nlohmann::json summarize_calibration(const CalibrationFile& file);
std::string render_calibration_summary(const nlohmann::json& summary);

}  // namespace fsq
