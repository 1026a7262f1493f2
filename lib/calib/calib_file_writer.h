// A calibration file written as its tensors are made, in any order: the layout (every
// tensor's name, dtype and shape) is fixed first, each tensor is written at its offset when
// it is ready, and the metadata, which holds what is known only at the end (the Fisher pass's
// mean loss), goes into room reserved at the start. A 7B model's Fisher diagonals (27 GB in
// f32) thus never sit in memory together: fsq calibrate --fisher hands each layer's to the
// file and frees them. The file appears only on commit() (temporary file, fsync, rename).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "formats/safetensors.h"

namespace fsq {

class CalibrationFileWriter {
 public:
  // `tensors` in any order (names unique). `provisional` is the provenance as far as it is
  // known; the final one passed to commit() may differ only in values of bounded length
  // (numbers, short strings): kMetadataSlack bytes are reserved for the difference.
  // Throws fsq::Error naming the file on an invalid layout or when it cannot be created.
  CalibrationFileWriter(const std::filesystem::path& path, std::vector<TensorLayout> tensors,
                        const nlohmann::json& provisional);

  // Writes one tensor's bytes (exactly its layout's size); each name once.
  void write(const std::string& name, std::span<const std::byte> data);
  // Throws fsq::Error when a tensor was never written or the metadata outgrew its room;
  // nothing is published then.
  void commit(const nlohmann::json& provenance);

  static constexpr size_t kMetadataSlack = 512;

 private:
  struct Slot {
    uint64_t offset = 0;  // from the start of the file
    uint64_t nbytes = 0;
    bool written = false;
  };
  std::filesystem::path path_;
  std::vector<TensorLayout> sorted_;
  std::map<std::string, Slot> slots_;
  size_t header_bytes_ = 0;
  AtomicFile file_;
};

// The file's metadata entries (fsq.kind, format version, provenance) around `provenance`.
std::map<std::string, std::string> calibration_metadata(const nlohmann::json& provenance);

}  // namespace fsq
