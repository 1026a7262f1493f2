// The calibration file: one safetensors file holding, per decoder linear L,
//   L.input_absmax, L.input_mean, L.input_sqmean   F32 [in_features]  (linears that read the
//                                                  same input carry the same values)
//   L.fisher                                       F32 [out, in]      (only with --fisher)
// and per decoder layer P ("model.layers.N"): P.output_absmax F32 [hidden].
// __metadata__: "fsq.kind" = "calibration", "fsq.format_version", and "fsq.provenance": a
// JSON object (model and data sha256, samples, seq_len, seed, window starts, tool version,
// and "layers": the linear groups of every layer, so readers need no architecture table).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/safetensors.h"

namespace fsq {

inline constexpr int kCalibFormatVersion = 1;
inline constexpr const char* kCalibKind = "calibration";

// Tensor-name suffixes.
inline constexpr const char* kInputAbsmax = ".input_absmax";
inline constexpr const char* kInputMean = ".input_mean";
inline constexpr const char* kInputSqmean = ".input_sqmean";
inline constexpr const char* kFisher = ".fisher";
inline constexpr const char* kOutputAbsmax = ".output_absmax";

// Writes atomically (temp file, fsync, rename): no partial file on failure.
void write_calibration_file(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                            const nlohmann::json& provenance);

struct InputStats {
  std::span<const float> absmax, mean, sqmean;
};

class CalibrationFile {
 public:
  // Validates kind, version, provenance and that every tensor the layout names is present,
  // F32 and of a consistent shape; throws fsq::Error naming the file otherwise.
  static CalibrationFile open(const std::filesystem::path& path);
  // open(), and also refuses a file calibrated on other weights than `weights_sha256` (its
  // provenance's model_sha256); the error ends with `remedy` ("run fsq calibrate on ...").
  static CalibrationFile open_for_model(const std::filesystem::path& path, const std::string& weights_sha256,
                                        const std::string& remedy);
  // True when `path` is a safetensors file whose metadata says it is a calibration file.
  static bool is_calibration_file(const SafetensorsFile& file);

  const std::filesystem::path& path() const { return file_->path(); }
  const nlohmann::json& provenance() const { return provenance_; }
  bool has_fisher() const;

  std::optional<InputStats> input_stats(const std::string& linear) const;  // nullopt: not recorded
  const TensorView* fisher(const std::string& linear) const;              // nullptr: not recorded
  std::span<const float> output_absmax(const std::string& layer_prefix) const;

 private:
  std::shared_ptr<const SafetensorsFile> file_;
  nlohmann::json provenance_;
};

// The floats of an F32 view (the caller checked the dtype).
std::span<const float> float_span(const TensorView& v);

}  // namespace fsq
