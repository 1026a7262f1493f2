#include "quantize/layer_loop.h"

#include <ATen/ATen.h>

#include <malloc.h>

#include "common/error.h"
#include "common/progress.h"
#include "formats/architectures.h"
#include "formats/checkpoint.h"
#include "quantize/layer_inputs.h"
#include "quantize/quantize_model.h"
#include "quantize/stored_values.h"

namespace fsq {
namespace {

// Widths a LUT (squeezellm) plan stores as round-to-nearest int8 groups: SqueezeLLM's
// tables pay off at 3 and 4 bits; at 8, uniform int8 is as exact and runs the int8 kernels.
bool lut_plan_int8(bool lut, int bits) { return lut && bits == 8; }

// PassContext::role_bits for one layer of a plan: the widths the rounding stage takes to
// uniform types, 0 for the linears stored otherwise (16 bits; LUT widths in a squeezellm plan).
std::map<std::string, int> uniform_role_bits(const LayerWidths& widths, bool lut) {
  std::map<std::string, int> out;
  for (const auto& [role, bits] : widths) out[role] = bits == 16 || (lut && !lut_plan_int8(lut, bits)) ? 0 : bits;
  return out;
}

}  // namespace

int64_t run_layer_loop(const LayerLoopInputs& in, const QuantMethod& method, const LayerStore& store,
                       const std::string& progress_label) {
  const QuantizeConfig& cfg = in.config;
  const ModelConfig& mc = in.checkpoint.config();
  const ArchSpec& arch = arch_spec_for(mc.architecture);
  const bool calibrate_here = in.inputs.calibrate_here;
  const bool has_plan = cfg.has_plan();
  squeezellm::LutOptions lut_options = cfg.lut;
  lut_options.bits = cfg.quant.bits;

  // The layer's pass context: quant at the width the layer's rounded linears share
  // (per-layer plans), role_bits for per-linear ones.
  auto context_of = [&](int64_t i, const RopeTables& rope) {
    PassContext ctx{mc, arch, rope, i, in.inputs.quant, cfg.batch_size, cfg.search_tokens};
    ctx.activation_stats = in.activation_stats;
    if (has_plan) {
      ctx.role_bits = uniform_role_bits(in.widths[i], in.inputs.lut);
      for (const auto& [role, bits] : ctx.role_bits)
        if (bits != 0) ctx.quant.bits = bits;
    }
    return ctx;
  };

  auto shell = LlamaModel::load(in.checkpoint, cfg.runtime, /*with_layers=*/false);
  // Calibration windows run at positions [0, seq_len); data-free methods run no forward.
  const RopeTables rope = shell->rope(calibrate_here ? cfg.draw.seq_len : 0);
  at::Tensor hidden;
  if (calibrate_here) {
    at::NoGradGuard no_grad;
    const at::Tensor& ids = in.calibration_ids;
    std::vector<at::Tensor> parts;
    for (int64_t b = 0; b < ids.size(0); b += cfg.batch_size)
      parts.push_back(shell->embed(ids.narrow(0, b, std::min(cfg.batch_size, ids.size(0) - b))));
    hidden = at::cat(parts, 0);
  }
  auto later_layers_pending = [&](int64_t i) {
    for (int64_t j = i + 1; j < mc.num_layers; ++j)
      if (!store.has(j)) return true;
    return false;
  };
  // The next layer's input from layer i as stored (quantized inputs) or as in the fp model.
  auto carry = [&](DecoderLayer& layer, int64_t i, const StoredLayer& stored, const at::Tensor& fp_output) {
    if (!calibrate_here) return;
    if (cfg.quantized_inputs && later_layers_pending(i)) {
      use_stored_values(layer, arch, stored);
      hidden = run_fp_layer(layer, hidden, rope, mc, i, cfg.batch_size, false).output;
    } else if (fp_output.defined()) {
      hidden = fp_output;
    }
  };

  int64_t resumed = 0, quantized_now = 0;
  auto count_saved_layer = [&] {
    if (cfg.stop_after_layers >= 0 && ++quantized_now >= cfg.stop_after_layers)
      throw Error("quantize", "stopped after " + std::to_string(quantized_now) + " layers (testing hook)");
  };
  Progress bar(progress_label, mc.num_layers);
  for (int64_t i = 0; i < mc.num_layers; ++i) {
    if (store.has(i)) {
      resumed += 1;
      if (calibrate_here && later_layers_pending(i)) {
        DecoderLayer saved = shell->load_layer(in.checkpoint, i);
        if (cfg.quantized_inputs) use_stored_values(saved, arch, store.load(i));
        hidden = run_fp_layer(saved, hidden, rope, mc, i, cfg.batch_size, false).output;
      }
      bar.update(i + 1, "layer " + std::to_string(i) + " (saved)");
      continue;
    }
    DecoderLayer layer = shell->load_layer(in.checkpoint, i);
    const LayerWidths& widths = in.widths[i];
    if (all_widths_are(widths, 16)) {
      StoredLayer stored;
      stored.report = {{"bits", 16}};
      keep_fp16_linears(layer, arch, nullptr, stored);
      store.save(i, stored);
      count_saved_layer();
      if (calibrate_here && later_layers_pending(i)) {
        use_stored_values(layer, arch, stored);
        hidden = run_fp_layer(layer, hidden, rope, mc, i, cfg.batch_size, false).output;
      }
      malloc_trim(0);
      bar.update(i + 1, "layer " + std::to_string(i) + " (16-bit)");
      continue;
    }
    LayerRun run;
    if (calibrate_here) run = run_fp_layer(layer, hidden, rope, mc, i, cfg.batch_size, true);
    const MethodContext ctx{context_of(i, rope), cfg,          hidden,       run.acts,
                            in.inputs.gptq,     in.fisher,    &lut_options, has_plan ? &widths : nullptr};
    LayerOutcome outcome = method.quantize_layer(layer, ctx);
    if (any_width_is(widths, 16)) keep_fp16_linears(layer, arch, &widths, outcome.stored);
    store.save(i, outcome.stored);
    count_saved_layer();
    if (outcome.next_hidden.defined())
      hidden = outcome.next_hidden;
    else
      carry(layer, i, outcome.stored, run.output);
    malloc_trim(0);
    bar.update(i + 1, "layer " + std::to_string(i));
  }
  bar.finish();
  return resumed;
}

}  // namespace fsq
