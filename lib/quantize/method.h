// A quantization method (`fsq quantize --method NAME`): one row of quant_methods() that says
// what the method needs and stores, and one QuantMethod that turns one fp decoder layer into
// the layer the checkpoint keeps. The pipeline (quantize_model.cpp: inputs, layer loop,
// assembly) reads the row and calls the method; it never asks which method it runs.
// A new method is one file (its QuantMethod and factory) plus one row in methods.cpp.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "quantize/layer_store.h"
#include "quantize/plan_widths.h"
#include "quantize/pass.h"

namespace fsq {

class CalibrationFile;
struct QuantizeConfig;
struct QuantizedLinearToWrite;
namespace squeezellm {
struct LutOptions;
}

// Calibration text (--calib-data): whether the method runs calibration windows through the
// layers. Any method runs them with --gptq (GPTQ's Hessians).
enum class CalibrationWindows {
  OnlyForGptq,  // data-free rounding (rtn), or statistics from a file (squeezellm)
  Always,       // searches or measures on the windows (awq, smoothquant, w8a8, intonly)
};

// The calibration file (--calib, from fsq calibrate) the method may read instead of windows.
enum class CalibrationFileUse {
  None,    // refused
  Stats,   // per-channel input absmax, with a fixed --alpha (smoothquant, w8a8)
  Fisher,  // Fisher diagonals (squeezellm); without a file the pipeline runs the Fisher pass
};

// What the method stores for each linear.
enum class StoredKind {
  Uniform,      // integer groups (--bits, --group-size, --sym)
  LookupTable,  // per-row LUT + sparse CSR (--bits 3 or 4)
  W8A8,         // int8 weights per output channel and int8 activations (--bits not taken)
};

// Which --act-quant the method takes.
enum class ActivationRule {
  NotQuantized,  // weight-only
  AnyMode,       // per-token, per-block or per-tensor
  StaticOnly,    // per-tensor only (integer-only ranges are static)
};

struct MethodNeeds {
  CalibrationWindows windows = CalibrationWindows::OnlyForGptq;
  CalibrationFileUse calib_file = CalibrationFileUse::None;
  // The message that refuses --calib for a method that reads none (empty: the general one).
  std::string no_calib_file_reason;
  bool gptq = true;  // --gptq allowed
  StoredKind stores = StoredKind::Uniform;
  std::vector<int> widths = {2, 3, 4, 8};  // what --bits may be (W8A8: 8, fixed)
  ActivationRule activations = ActivationRule::NotQuantized;
  bool alpha = false;  // takes --alpha (SmoothQuant's migration strength)
  // The calibration windows feed block-output searches (a reference and a candidate output
  // per block in memory: quantize_plan.h QuantizeShape::searches).
  bool searches = false;
  bool plans = false;  // takes --plan (mixed widths per layer or linear)
};

// What a method sees of one layer besides the layer itself.
struct MethodContext {
  PassContext pass;  // the layer's quant type per role, rope, statistics file
  const QuantizeConfig& config;
  // The layer's input over the calibration windows [N, T, hidden] (undefined: none run) and the
  // inputs of its linear groups as the fp layer produced them (empty: none collected).
  const at::Tensor& hidden;
  const LayerActivations& fp_inputs;
  bool gptq = false;  // round by GPTQ on calibration inputs instead of to nearest
  // Fisher diagonals (squeezellm; nullptr: unweighted), the LUT options and, in a plan, this
  // layer's widths per role (nullptr: every linear at the configured width).
  const CalibrationFile* fisher = nullptr;
  const squeezellm::LutOptions* lut = nullptr;
  const LayerWidths* widths = nullptr;

  // The inputs of `layer`'s linear groups as the layer now stands (after a method's folds).
  LayerActivations rerun_inputs(const DecoderLayer& layer) const;
};

struct LayerOutcome {
  StoredLayer stored;
  // The next layer's input when the method already ran the stored layer over the windows
  // (undefined: the pipeline runs it when it needs it).
  at::Tensor next_hidden;
};

class QuantMethod {
 public:
  virtual ~QuantMethod() = default;
  // Quantizes `layer` (a private fp copy the method may rewrite) into what the checkpoint keeps.
  virtual LayerOutcome quantize_layer(DecoderLayer& layer, const MethodContext& ctx) const = 0;
  // The options of this method that change the output bytes (fsq.json run_options and the
  // resume fingerprint, besides the pipeline's own).
  virtual nlohmann::json byte_options(const QuantizeConfig& config) const = 0;
  // Fills in how the runtime reads a stored uniform linear (the method it names, activation
  // quantization); the default names this method.
  virtual void describe_linear(QuantizedLinearToWrite& linear, const StoredLayer& stored, const std::string& role) const;
  // The method name recorded with each linear.
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

 private:
  std::string name_;
};

struct MethodInfo {
  std::string name;
  std::string description;
  MethodNeeds needs;
  std::function<std::unique_ptr<QuantMethod>(const PassOptions&)> make;
};

const std::vector<MethodInfo>& quant_methods();
// Throws fsq::Error naming --method and listing the methods when `name` is unknown.
const MethodInfo& find_quant_method(const std::string& name);
// One line of what the method needs and takes, from its row (for --help).
std::string describe_needs(const MethodNeeds& needs);
// "a, b and c" (last_joiner "and"): the methods whose row satisfies `pred`.
std::string methods_where(const std::function<bool(const MethodNeeds&)>& pred, const std::string& last_joiner);

}  // namespace fsq
