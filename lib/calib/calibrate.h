// `fsq calibrate` as a library call: read and tokenize the data, draw windows, stream the
// model layer by layer recording activation statistics, optionally compute Fisher
// diagonals, and write the calibration file atomically with its provenance.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "calib/dataset.h"
#include "calib/memory_plan.h"
#include "runtime/model.h"

namespace fsq {

struct CalibrateConfig {
  std::filesystem::path model;  // HF checkpoint folder or .gguf file
  std::filesystem::path data;   // .txt, folder of .txt, or .jsonl with "text"
  std::filesystem::path out;    // calibration .safetensors
  WindowDraw draw;
  bool fisher = false;
  int64_t batch_size = 8;       // windows per forward call in the statistics pass
  RuntimeOptions runtime;
  int threads = 1;              // recorded in the summary
  std::string tool_version;
};

struct CalibrateSummary {
  std::filesystem::path out;
  int64_t samples = 0, seq_len = 0, tokens = 0;
  double load_seconds = 0, stats_seconds = 0, fisher_seconds = 0, write_seconds = 0;
  double mean_loss = 0;         // Fisher runs only
  int64_t peak_rss_bytes = 0;
  CalibrationMemory predicted;
  int threads = 1;
  nlohmann::json to_json() const;
  std::string to_text() const;
};

// Throws fsq::Error on bad input before any long work (missing model or data, empty data,
// too few tokens, --seq-len beyond the model's maximum, unwritable output).
CalibrateSummary run_calibration(const CalibrateConfig& config);

}  // namespace fsq
