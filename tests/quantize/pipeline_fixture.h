// The tiny-model fixture of the quantize pipeline tests: a random 3-layer LLaMA model (with
// stories260K's tokenizer and a short calibration text when asked) in a temporary folder.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fixtures.h"
#include "quantize/method.h"
#include "quantize/quantize_model.h"
#include "temp_dir.h"
#include "tiny_model.h"

namespace fsq::test {

namespace fs = std::filesystem;

struct Fixture {
  fs::path dir, model;
  // outlier_channels: that many hidden channels get norm gains outlier_gain times larger
  // (activation outliers, as SmoothQuant targets).
  explicit Fixture(const std::string& name, int64_t intermediate = 96, bool tokenizer = false,
                   int64_t outlier_channels = 0, float outlier_gain = 1.0f) {
    dir = testing::make_temp_dir_caller_removes("fsq-qpipe-" + name);
    model = dir / "model";
    testing::TinyModelSpec spec;
    spec.hidden = 64;
    spec.intermediate = intermediate;
    spec.layers = 3;
    spec.vocab = 512;  // stories260K's tokenizer, for calibrated runs
    spec.max_positions = 256;
    spec.outlier_channels = outlier_channels;
    spec.outlier_gain = outlier_gain;
    testing::write_tiny_model(model, spec);
    if (tokenizer) {
      const fs::path stories = testing::stories260k_dir();
      for (const char* f : {"tokenizer.model", "tokenizer_config.json", "special_tokens_map.json"})
        fs::copy_file(stories / f, model / f);
      std::ofstream(dir / "calib.txt")
          << "Once upon a time there was a little girl named Lily. She liked to play in the park with her dog. "
             "One day she found a big red ball under a tree and ran home to show her mom. Her mom smiled and "
             "said they could play together after lunch. Lily was very happy and hugged her mom tight.";
    }
  }
  ~Fixture() { fs::remove_all(dir); }
  QuantizeConfig config(const std::string& out, const std::string& method = "rtn") const {
    QuantizeConfig c;
    c.model = model;
    c.out = dir / out;
    c.method = method;
    c.quant = UniformQuant{4, 32, false};
    if (find_quant_method(method).needs.windows == CalibrationWindows::Always) {
      c.calib_data = dir / "calib.txt";
      c.draw = WindowDraw{6, 16, 3, /*allow_overlap=*/true};  // a short text, on purpose
      c.batch_size = 4;
    }
    return c;
  }
};

inline std::vector<std::string> lines_of(const QuantizeConfig& cfg, QuantizeSummary* summary = nullptr) {
  std::vector<std::string> lines;
  QuantizeSummary s = run_quantize(cfg, [&](const std::string& l) { lines.push_back(l); });
  if (summary) *summary = s;
  return lines;
}

inline bool mentions(const std::vector<std::string>& lines, const std::string& what) {
  for (const auto& l : lines)
    if (l.find(what) != std::string::npos) return true;
  return false;
}

}  // namespace fsq::test
