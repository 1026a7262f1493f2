// `fsq eval` as a library call: load the model (and reference), tokenize the data set, cut
// windows per protocol, run perplexity / comparison, measure speed, fill the report.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "common/progress.h"
#include "runtime/decoder_choice.h"
#include "runtime/model.h"
#include "runtime/eval/report.h"
#include "runtime/eval/speed.h"
#include "runtime/eval/windows.h"

namespace fsq {

struct EvalConfig {
  std::filesystem::path model_dir;
  std::optional<std::filesystem::path> data_path;    // required unless speed only
  std::optional<std::filesystem::path> compare_dir;  // reference model
  // --reference-cache: folder keeping the reference's scored rows between runs (reference_cache.h)
  std::optional<std::filesystem::path> reference_cache_dir;
  uint64_t reference_cache_max_bytes = 0;  // trim_reference_cache's limit after the run (0: none)
  std::string fsq_build;  // with a reference cache: what identifies this build (part of the key)
  Protocol protocol = Protocol::Gptq;
  std::optional<int64_t> seq_len;  // default: kDefaultSeqLen capped at the model's maximum
  int64_t max_windows = 0;         // 0: all
  int64_t batch_size = 0;          // 0: auto_batch_size
  RuntimeOptions runtime;          // device (device.load_device) and compute dtype
  // --device as parsed. With device.cuda_decoder `runtime` loads on the CPU, and the model's
  // windows and decode steps run on what choose_decoder picks (runtime/decoder_choice.h):
  // fsq's CUDA decoder where it can run the model; elsewhere the model reloads on LibTorch's
  // CUDA if it has one, else the run fails saying why.
  DeviceRequest device;
  int threads = 0;                 // as applied by the caller (stamped into the report)
  std::string thread_waits;        // the caller's worker wait settings (stamped into the report)
  bool perplexity = true;          // false: --speed-only
  bool speed = true;               // false: --no-speed
  bool allow_nonfinite = false;    // --allow-nonfinite: report NaN/Inf perplexity instead of failing
  SpeedOptions speed_options;
  ProgressMode progress = ProgressMode::Auto;
  std::string fsq_version;
};

EvalReport evaluate(const EvalConfig& cfg);


}  // namespace fsq
