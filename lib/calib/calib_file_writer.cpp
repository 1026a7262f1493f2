#include "calib/calib_file_writer.h"

#include <algorithm>

#include "calib/calib_file.h"
#include "common/error.h"

namespace fsq {

std::map<std::string, std::string> calibration_metadata(const nlohmann::json& provenance) {
  return {{"fsq.kind", kCalibKind},
          {"fsq.format_version", std::to_string(kCalibFormatVersion)},
          {"fsq.provenance", provenance.dump()}};
}

CalibrationFileWriter::CalibrationFileWriter(const std::filesystem::path& path, std::vector<TensorLayout> tensors,
                                             const nlohmann::json& provisional)
    : path_(path), sorted_(std::move(tensors)), file_(path) {
  std::sort(sorted_.begin(), sorted_.end(),
            [](const TensorLayout& a, const TensorLayout& b) { return a.name < b.name; });
  // The provisional header's size plus the slack, 8-byte aligned, is the room the final one gets.
  const size_t provisional_bytes = safetensors_header(sorted_, calibration_metadata(provisional), path.string()).size();
  header_bytes_ = (provisional_bytes + kMetadataSlack + 7) / 8 * 8;
  uint64_t offset = header_bytes_;
  for (const TensorLayout& t : sorted_) {
    slots_[t.name] = Slot{offset, t.nbytes, false};
    offset += t.nbytes;
  }
}

void CalibrationFileWriter::write(const std::string& name, std::span<const std::byte> data) {
  auto it = slots_.find(name);
  if (it == slots_.end()) throw Error(path_.string(), "tensor '" + name + "' is not in the file's layout");
  Slot& slot = it->second;
  if (slot.written) throw Error(path_.string(), "tensor '" + name + "' was written twice");
  if (data.size() != slot.nbytes)
    throw Error(path_.string(), "tensor '" + name + "' has " + std::to_string(data.size()) + " bytes, its layout " +
                                    std::to_string(slot.nbytes));
  file_.write_at(slot.offset, data);
  slot.written = true;
}

void CalibrationFileWriter::commit(const nlohmann::json& provenance) {
  for (const auto& [name, slot] : slots_)
    if (!slot.written) throw Error(path_.string(), "tensor '" + name + "' was never written");
  const std::string header = safetensors_header(sorted_, calibration_metadata(provenance), path_.string(), header_bytes_);
  file_.write_at(0, std::as_bytes(std::span(header.data(), header.size())));
  file_.commit();
}

}  // namespace fsq
