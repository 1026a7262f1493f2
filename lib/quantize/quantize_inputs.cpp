#include "quantize/quantize_inputs.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "calib/calibrate.h"
#include "calib/dataset.h"
#include "calib/layer_stream.h"
#include "common/error.h"
#include "formats/architectures.h"
#include "formats/checkpoint.h"
#include "formats/quant/quant_types.h"
#include "formats/quant/w8a8_quant.h"
#include "formats/tokenizer.h"
#include "quantize/quantize_model.h"

namespace fsq {
namespace {

// SqueezeLLM needs Fisher diagonals unless it runs unweighted without the sensitive part.
bool lut_needs_fisher(const squeezellm::LutOptions& o) { return o.weighted || (!o.dense_only && o.sensitive_pct > 0); }

}  // namespace

QuantizeInputs resolve_quantize_inputs(const QuantizeConfig& cfg) {
  QuantizeInputs in;
  in.method = &find_quant_method(cfg.method);
  const MethodNeeds& needs = in.method->needs;
  const std::string method = "--method " + cfg.method;
  const bool w8a8 = needs.stores == StoredKind::W8A8;
  in.quant = w8a8 ? kW8A8Weights : cfg.quant;
  validate_uniform_quant(in.quant, "--bits/--group-size");
  const ActivationQuant act = cfg.pass_options.act_quant;
  if (needs.activations != ActivationRule::NotQuantized && act == ActivationQuant::None)
    throw Error("--act-quant", method + " quantizes activations: use per-token, per-block or per-tensor");
  if (needs.activations == ActivationRule::StaticOnly && act != ActivationQuant::PerTensor)
    throw Error("--act-quant", method + " needs static activation scales: use per-tensor");
  if (cfg.calib_file && needs.calib_file == CalibrationFileUse::None && !needs.no_calib_file_reason.empty())
    throw Error("--calib", method + " " + needs.no_calib_file_reason);
  in.stats_from_file = needs.calib_file == CalibrationFileUse::Stats && cfg.calib_file.has_value();
  if (in.stats_from_file && needs.alpha && !cfg.pass_options.smooth_alpha)
    throw Error("--alpha", "auto searches on calibration activations, which a --calib file does not hold; give "
                           "--calib-data TEXT instead, or a fixed --alpha");
  in.lut = needs.stores == StoredKind::LookupTable;
  in.gptq = cfg.pass_options.gptq;
  if (in.gptq && !needs.gptq) throw Error("--gptq", method + " does not round by GPTQ");
  if (in.gptq && (in.stats_from_file || !cfg.calib_data))
    throw Error("--gptq", std::string("needs calibration inputs") +
                              (in.stats_from_file ? ", which a --calib file does not hold" : "") + ": give --calib-data TEXT" +
                              (in.lut ? " (the Fisher diagonals may still come from --calib)"
                               : in.stats_from_file ? " instead"
                                                    : ""));
  in.calibrate_here = (needs.windows == CalibrationWindows::Always || in.gptq) && !in.stats_from_file;
  if (in.calibrate_here && !cfg.calib_data)
    throw Error("--calib-data", method + " needs calibration text (a .txt, folder or .jsonl)" +
                                    (needs.calib_file == CalibrationFileUse::Stats
                                         ? " or a calibration file (--calib, from fsq calibrate)"
                                         : ""));
  in.use_fisher = needs.calib_file == CalibrationFileUse::Fisher && lut_needs_fisher(cfg.lut);
  if (!w8a8 && std::find(needs.widths.begin(), needs.widths.end(), cfg.quant.bits) == needs.widths.end()) {
    std::string widths, codes;  // "3 or 4", "3- or 4-bit codes"
    for (size_t i = 0; i < needs.widths.size(); ++i) {
      const std::string sep = i == 0 ? "" : i + 1 == needs.widths.size() ? " or " : ", ";
      widths += sep + std::to_string(needs.widths[i]);
      codes += (i == 0 ? "" : "-" + sep) + std::to_string(needs.widths[i]);
    }
    throw Error("--bits", method + " stores " + codes + "-bit codes", widths, std::to_string(cfg.quant.bits));
  }
  if (cfg.calib_file && needs.calib_file == CalibrationFileUse::None)
    throw Error("--calib", "only --method " +
                               methods_where([](const MethodNeeds& n) { return n.calib_file != CalibrationFileUse::None; },
                                             "and") +
                               " read a calibration file; " + method + " calibrates on --calib-data text");
  if (in.use_fisher && !cfg.calib_file && !cfg.calib_data)
    throw Error("--calib", method +
                               " needs Fisher diagonals: give --calib FILE (from fsq calibrate --fisher) or "
                               "--calib-data TEXT to run the Fisher pass here (or --unweighted --sensitive-pct 0)");
  in.fisher_pass = in.use_fisher && !cfg.calib_file;
  return in;
}

std::vector<LayerWidths> layer_widths_for(const QuantizeConfig& cfg, const QuantizeInputs& in, const Checkpoint& ckpt) {
  const ModelConfig& mc = ckpt.config();
  const ArchSpec& arch = arch_spec_for(mc.architecture);
  if ((in.calibrate_here || in.fisher_pass) && cfg.draw.seq_len > mc.max_position_embeddings)
    throw Error("--seq-len", "exceeds the model's maximum positions",
                "<= " + std::to_string(mc.max_position_embeddings), std::to_string(cfg.draw.seq_len));
  if (cfg.has_plan() && !in.method->needs.plans)
    throw Error("--plan", "--method " + cfg.method + " has one width (int8); mixed plans need " +
                              methods_where([](const MethodNeeds& n) { return n.plans; }, "or"));
  std::vector<LayerWidths> planned =
      expand_plan_widths(cfg.layer_bits, cfg.linear_bits, arch, mc.num_layers, cfg.method, in.lut);
  if (!cfg.layer_bits_model_sha256.empty() && cfg.layer_bits_model_sha256 != ckpt.weights_sha256())
    throw Error("--plan", "was made for other weights (model sha256 " + cfg.layer_bits_model_sha256.substr(0, 12) +
                              "..., --model has " + ckpt.weights_sha256().substr(0, 12) + "...)");
  if (!planned.empty()) return planned;
  LayerWidths everywhere;
  for (const auto& spec : arch.linears) everywhere[spec.role] = in.quant.bits;
  return std::vector<LayerWidths>(static_cast<size_t>(mc.num_layers), everywhere);
}

at::Tensor calibration_ids(const QuantizeConfig& cfg, nlohmann::json& provenance) {
  auto tokenizer = load_tokenizer(cfg.model);
  CalibrationText text = read_calibration_text(*cfg.calib_data);
  CalibrationSet set = make_calibration_set(*tokenizer, text, cfg.draw);
  if (!set.overlap_note.empty()) std::fprintf(stderr, "fsq: note: %s\n", set.overlap_note.c_str());
  provenance = {{"data", cfg.calib_data->string()}, {"data_sha256", text.sha256}, {"samples", cfg.draw.samples},
                {"seq_len", cfg.draw.seq_len}, {"seed", cfg.draw.seed}, {"bos", set.bos},
                {"tokenizer_sha256", tokenizer->sha256()}, {"window_starts", set.starts}};
  return window_ids(set);
}

void run_fisher_pass(const QuantizeConfig& cfg, const std::filesystem::path& path) {
  CalibrateConfig c;
  c.model = cfg.model;
  c.data = *cfg.calib_data;
  c.out = path;
  c.draw = cfg.draw;
  c.fisher = true;
  c.batch_size = cfg.batch_size;
  c.runtime = cfg.runtime;
  c.threads = cfg.threads;
  c.tool_version = cfg.producer.is_object() ? cfg.producer.value("version", "") : "";
  run_calibration(c);
}

}  // namespace fsq
