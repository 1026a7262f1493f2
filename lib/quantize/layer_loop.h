// The layer loop of `fsq quantize`: each decoder layer loaded from the source, quantized by the
// method (or kept at 16 bits where a plan says so) and saved to the resumable store; layers
// already saved are skipped, and the calibration windows are carried from layer to layer
// through the layers as stored (or as in the fp model: --layer-inputs fp).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "quantize/layer_store.h"
#include "quantize/method.h"
#include "quantize/plan_widths.h"
#include "quantize/quantize_inputs.h"

namespace fsq {

class CalibrationFile;
class Checkpoint;

struct LayerLoopInputs {
  const QuantizeConfig& config;
  const QuantizeInputs& inputs;
  const Checkpoint& checkpoint;
  const std::vector<LayerWidths>& widths;  // per layer (layer_widths_for)
  at::Tensor calibration_ids;              // [N, T]; undefined when no windows run
  const CalibrationFile* fisher = nullptr;
  const CalibrationFile* activation_stats = nullptr;
};

// Returns how many layers were already saved (resumed).
int64_t run_layer_loop(const LayerLoopInputs& in, const QuantMethod& method, const LayerStore& store,
                       const std::string& progress_label);

}  // namespace fsq
