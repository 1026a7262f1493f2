// Resumable quantization: every finished layer is saved in "<out>.partial/" next to a
// fingerprint of everything that decides the result (source weights sha256, calibration
// data sha256 and windows, method, quant type, options, threads, the fsq build, format
// version). A rerun with the same fingerprint picks up the saved layers; any difference
// starts over, saying why. The final checkpoint is always assembled from the saved layers,
// so a resumed run writes the same bytes as an uninterrupted one. An interrupted run
// (SIGINT/SIGTERM, tools/fsq/interrupt.h) keeps this folder.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/quant/lut_quant.h"
#include "formats/quant/uniform_reference.h"

namespace fsq {

// What the pipeline keeps of one quantized layer.
struct StoredLayer {
  std::map<std::string, QuantizedMatrix> linears;     // role -> canonical values (uniform types)
  std::map<std::string, LutMatrix> lut_linears;       // role -> canonical values (LUT types)
  std::map<std::string, std::vector<float>> vectors;  // "input_norm", "post_attn_norm", "<role>.bias"
  nlohmann::json report;
};

class LayerStore {
 public:
  // Opens (or starts) the partial folder of `out`. When it holds a different fingerprint, or
  // `resume` is false, the old folder is removed; `message` says what happened.
  LayerStore(const std::filesystem::path& out, const nlohmann::json& fingerprint, bool resume, std::string& message);

  bool has(int64_t layer) const;
  void save(int64_t layer, const StoredLayer& stored) const;  // atomic
  StoredLayer load(int64_t layer) const;
  void remove() const;  // after the checkpoint was written
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path file(int64_t layer) const;
  std::filesystem::path dir_;
};

}  // namespace fsq
