#include "calib/calib_file.h"
#include "calib/calib_file_writer.h"

#include <cstring>

#include "common/error.h"

namespace fsq {

void write_calibration_file(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                            const nlohmann::json& provenance) {
  write_safetensors(path, tensors, calibration_metadata(provenance));
}

std::span<const float> float_span(const TensorView& v) {
  return {reinterpret_cast<const float*>(v.data), static_cast<size_t>(v.numel())};
}

CalibrationFile CalibrationFile::open_for_model(const std::filesystem::path& path, const std::string& weights_sha256,
                                                const std::string& remedy) {
  CalibrationFile calib = open(path);
  const auto& prov = calib.provenance();
  const std::string recorded = prov.contains("model_sha256") && prov["model_sha256"].is_string()
                                   ? prov["model_sha256"].get<std::string>()
                                   : std::string("(none)");
  if (recorded != weights_sha256)
    throw Error(path.string(), "was calibrated on other weights (model_sha256 " + recorded.substr(0, 12) +
                                   "..., this model's is " + weights_sha256.substr(0, 12) + "...); " + remedy);
  return calib;
}

bool CalibrationFile::is_calibration_file(const SafetensorsFile& file) {
  auto it = file.metadata().find("fsq.kind");
  return it != file.metadata().end() && it->second == kCalibKind;
}

CalibrationFile CalibrationFile::open(const std::filesystem::path& path) {
  CalibrationFile out;
  out.file_ = SafetensorsFile::open(path);
  const std::string where = path.string();
  const auto& meta = out.file_->metadata();
  if (!is_calibration_file(*out.file_))
    throw Error(where, "not an fsq calibration file (no \"fsq.kind\": \"calibration\" metadata); make one with fsq calibrate");
  auto version = meta.find("fsq.format_version");
  if (version == meta.end() || version->second != std::to_string(kCalibFormatVersion))
    throw Error(where, "unsupported calibration format version", std::to_string(kCalibFormatVersion),
                version == meta.end() ? "none" : quote_name(version->second));
  auto prov = meta.find("fsq.provenance");
  if (prov == meta.end()) throw Error(where, "calibration metadata lacks fsq.provenance");
  try {
    out.provenance_ = nlohmann::json::parse(prov->second);
  } catch (const nlohmann::json::exception&) {
    throw Error(where, "fsq.provenance metadata is not valid JSON");
  }
  if (!out.provenance_.is_object() || !out.provenance_.contains("layers") || !out.provenance_["layers"].is_array())
    throw Error(where, "fsq.provenance lacks the \"layers\" layout");

  // Every tensor the layout names must be there, F32, with matching lengths.
  auto require_f32 = [&](const std::string& name, size_t dims) -> const TensorView& {
    const TensorView* v = out.file_->find(name);
    if (v == nullptr) throw Error(where, "missing tensor " + quote_name(name));
    if (v->dtype != DType::F32 || v->shape.size() != dims)
      throw Error(where, "tensor " + quote_name(name) + " must be F32 with " + std::to_string(dims) + " dimension(s)");
    return *v;
  };
  const bool fisher = out.has_fisher();
  try {
    for (const auto& layer : out.provenance_["layers"]) {
      require_f32(layer.at("prefix").get<std::string>() + kOutputAbsmax, 1);
      for (const auto& group : layer.at("groups")) {
        for (const auto& linear_json : group.at("linears")) {
          const std::string linear = linear_json.get<std::string>();
          const TensorView& absmax = require_f32(linear + kInputAbsmax, 1);
          for (const char* stat : {kInputMean, kInputSqmean})
            if (require_f32(linear + stat, 1).shape != absmax.shape)
              throw Error(where, "tensor " + quote_name(linear + stat) + " differs in length from " +
                                     quote_name(linear + kInputAbsmax));
          if (fisher && require_f32(linear + kFisher, 2).shape[1] != absmax.shape[0])
            throw Error(where, "tensor " + quote_name(linear + kFisher) + " has a different input width than " +
                                   quote_name(linear + kInputAbsmax));
        }
      }
    }
  } catch (const nlohmann::json::exception&) {
    throw Error(where, "fsq.provenance \"layers\" layout is malformed");
  }
  return out;
}

bool CalibrationFile::has_fisher() const { return provenance_.value("fisher", false); }

std::optional<InputStats> CalibrationFile::input_stats(const std::string& linear) const {
  const TensorView* absmax = file_->find(linear + kInputAbsmax);
  const TensorView* mean = file_->find(linear + kInputMean);
  const TensorView* sqmean = file_->find(linear + kInputSqmean);
  if (absmax == nullptr || mean == nullptr || sqmean == nullptr) return std::nullopt;
  return InputStats{float_span(*absmax), float_span(*mean), float_span(*sqmean)};
}

const TensorView* CalibrationFile::fisher(const std::string& linear) const { return file_->find(linear + kFisher); }

std::span<const float> CalibrationFile::output_absmax(const std::string& layer_prefix) const {
  const TensorView* v = file_->find(layer_prefix + kOutputAbsmax);
  if (v == nullptr) return {};
  return float_span(*v);
}

}  // namespace fsq
