// The inputs of `fsq quantize`, decided from the config and the method's row (method.h)
// before any long work: which calibration it runs or reads, the plan's widths, the
// calibration windows and files. Every refusal is one line naming the option.
#pragma once

#include <ATen/core/Tensor.h>

#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/quant/uniform_quant.h"
#include "quantize/method.h"
#include "quantize/plan_widths.h"

namespace fsq {

class Checkpoint;
struct QuantizeConfig;

struct QuantizeInputs {
  const MethodInfo* method = nullptr;
  UniformQuant quant;            // the weights' type (W8A8 methods: kW8A8Weights, whatever --bits says)
  bool lut = false;              // the method stores lookup tables
  bool calibrate_here = false;   // calibration windows run through the layers
  bool stats_from_file = false;  // input statistics come from --calib instead
  bool use_fisher = false;       // lookup tables weighted by Fisher diagonals
  bool fisher_pass = false;      // ... computed here first from --calib-data (no --calib)
  bool gptq = false;             // rounding by GPTQ on calibration inputs
};

// Checks `cfg` against its method's needs; throws fsq::Error before the model is read.
QuantizeInputs resolve_quantize_inputs(const QuantizeConfig& cfg);

// Checks the options that depend on the model (window length, the plan) and returns each
// layer's widths per linear: the plan's, or `inputs.quant.bits` everywhere.
std::vector<LayerWidths> layer_widths_for(const QuantizeConfig& cfg, const QuantizeInputs& inputs,
                                          const Checkpoint& ckpt);

// The calibration windows' token ids [N, T]; `provenance` gets where they came from.
at::Tensor calibration_ids(const QuantizeConfig& cfg, nlohmann::json& provenance);

// Runs `fsq calibrate --fisher` on the quantize options into `path`.
void run_fisher_pass(const QuantizeConfig& cfg, const std::filesystem::path& path);

}  // namespace fsq
