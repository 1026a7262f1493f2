// The one table of quantization methods. A new method: its file (a QuantMethod and a factory,
// declared below) and one row.
#include "common/error.h"
#include "formats/packed_checkpoint.h"
#include "quantize/layer_inputs.h"
#include "quantize/method.h"
#include "quantize/quantize_model.h"

namespace fsq {

std::unique_ptr<QuantMethod> make_rtn_method(const PassOptions&);
std::unique_ptr<QuantMethod> make_awq_method(const PassOptions&);
std::unique_ptr<QuantMethod> make_squeezellm_method(const PassOptions&);
std::unique_ptr<QuantMethod> make_smoothquant_method(const PassOptions&);
std::unique_ptr<QuantMethod> make_w8a8_method(const PassOptions&);
std::unique_ptr<QuantMethod> make_intonly_method(const PassOptions&);

namespace {

MethodNeeds uniform_needs(CalibrationWindows windows, bool searches) {
  MethodNeeds n;
  n.windows = windows;
  n.searches = searches;
  n.plans = true;
  return n;
}

MethodNeeds lut_needs() {
  MethodNeeds n;
  n.calib_file = CalibrationFileUse::Fisher;
  n.stores = StoredKind::LookupTable;
  n.widths = {3, 4};
  n.plans = true;
  return n;
}

MethodNeeds w8a8_needs(bool alpha, CalibrationFileUse file, ActivationRule activations) {
  MethodNeeds n;
  n.windows = CalibrationWindows::Always;
  n.calib_file = file;
  n.stores = StoredKind::W8A8;
  n.widths = {8};
  n.activations = activations;
  n.alpha = alpha;
  n.searches = true;
  return n;
}

MethodNeeds intonly_needs() {
  MethodNeeds n = w8a8_needs(true, CalibrationFileUse::None, ActivationRule::StaticOnly);
  n.no_calib_file_reason = "measures its ranges on calibration windows; give --calib-data TEXT";
  return n;
}

}  // namespace

const std::vector<MethodInfo>& quant_methods() {
  static const std::vector<MethodInfo> methods = {
      {"rtn", "round-to-nearest group quantization (data-free baseline)",
       uniform_needs(CalibrationWindows::OnlyForGptq, false), make_rtn_method},
      {"awq", "activation-aware scale search per linear group, scale folding, clip search (Lin et al. 2023)",
       uniform_needs(CalibrationWindows::Always, true), make_awq_method},
      {"squeezellm",
       "Fisher-weighted per-row k-means lookup tables (3/4 bits) with dense-and-sparse outliers (Kim et al. 2023)",
       lut_needs(), make_squeezellm_method},
      {"smoothquant",
       "W8A8: activation outliers smoothed into the weights (alpha), int8 weights per channel and int8 "
       "activations per token or per tensor (Xiao et al. 2023)",
       w8a8_needs(true, CalibrationFileUse::Stats, ActivationRule::AnyMode), make_smoothquant_method},
      {"w8a8", "naive W8A8 (no smoothing): int8 weights per channel, int8 activations per token or per tensor",
       w8a8_needs(false, CalibrationFileUse::Stats, ActivationRule::AnyMode), make_w8a8_method},
      {"intonly",
       "integer-only inference (I-BERT): SmoothQuant (alpha) with static per-tensor int8 activations, plus the "
       "calibrated ranges of every activation the integer decoder layer requantizes to",
       intonly_needs(), make_intonly_method},
  };
  return methods;
}

const MethodInfo& find_quant_method(const std::string& name) {
  std::string names;
  for (const auto& m : quant_methods()) {
    if (m.name == name) return m;
    names += (names.empty() ? "" : ", ") + m.name;
  }
  throw Error("--method", "unknown quantization method " + quote_name(name) + "; available: " + names);
}

std::string methods_where(const std::function<bool(const MethodNeeds&)>& pred, const std::string& last_joiner) {
  std::vector<std::string> names;
  for (const auto& m : quant_methods())
    if (pred(m.needs)) names.push_back(m.name);
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " " + last_joiner + " " : ", ") + names[i];
  return out;
}

std::string describe_needs(const MethodNeeds& n) {
  std::string out = n.stores == StoredKind::W8A8 ? "int8 weights, no --bits" : "--bits ";
  for (size_t i = 0; n.stores != StoredKind::W8A8 && i < n.widths.size(); ++i) {
    if (i > 0) out += '/';
    out += std::to_string(n.widths[i]);
  }
  if (n.stores == StoredKind::Uniform) out += ", --group-size";
  if (n.windows == CalibrationWindows::Always)
    out += n.calib_file == CalibrationFileUse::Stats ? "; --calib-data TEXT (or --calib FILE with a fixed --alpha)"
                                                     : "; needs --calib-data TEXT";
  else if (n.calib_file == CalibrationFileUse::Fisher)
    out += "; --calib FISHER_FILE or --calib-data TEXT (Fisher pass)";
  else
    out += "; data-free";
  if (n.activations == ActivationRule::AnyMode) out += "; --act-quant per-token|per-tensor";
  if (n.activations == ActivationRule::StaticOnly) out += "; per-tensor activations";
  if (n.alpha) out += "; --alpha";
  if (n.gptq) out += n.windows == CalibrationWindows::Always ? "; --gptq" : "; --gptq (with --calib-data TEXT)";
  if (n.plans) out += "; --plan";
  return out;
}

LayerActivations MethodContext::rerun_inputs(const DecoderLayer& layer) const {
  return run_fp_layer(layer, hidden, pass.rope, pass.config, pass.layer, pass.block_batch, true).acts;
}

void QuantMethod::describe_linear(QuantizedLinearToWrite& linear, const StoredLayer&, const std::string&) const {
  linear.method = name_;
}

}  // namespace fsq
