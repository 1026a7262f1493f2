// SqueezeLLM in the quantize pipeline: the calibration file's Fisher diagonals and the LUT
// quantizer (squeezellm/lut_quantizer.h) applied to every linear of one decoder layer.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "calib/calib_file.h"
#include "quantize/layer_store.h"
#include "quantize/pass.h"
#include "quantize/squeezellm/lut_quantizer.h"

namespace fsq {

class Checkpoint;
struct ArchSpec;
struct DecoderLayer;

// Opens `path` as the Fisher source for `ckpt`: a calibration file made with --fisher from
// these very weights (its provenance's model_sha256). Throws fsq::Error naming the file and
// what to do otherwise.
CalibrationFile open_fisher_calibration(const std::filesystem::path& path, const Checkpoint& ckpt);

// Quantizes every linear of `layer` (layer number `index`) with `options`; `calib` holds
// the Fisher diagonals (nullptr: the unweighted ablation without Fisher). With `gptq_inputs`
// (the calibration inputs of the layer's linear groups) the codes are then chosen by GPTQ
// (gptq_lut.h) on each group's Hessian. Norms and biases are kept as they are. The report
// lists, per linear, the sparse values kept, the Fisher-weighted and plain squared errors of
// the nearest codes and, with GPTQ, its reconstruction loss as a share of nearest's.
// `widths` (a per-linear plan: role -> bits) quantizes only the roles it gives a LUT width
// (3 or 4), each at its own, and leaves the others (and their biases) to the caller;
// nullptr: every linear at options.bits.
StoredLayer quantize_layer_lut(const DecoderLayer& layer, const ArchSpec& arch, int64_t index,
                               const CalibrationFile* calib, const squeezellm::LutOptions& options,
                               const LayerActivations* gptq_inputs = nullptr,
                               const std::map<std::string, int>* widths = nullptr);

}  // namespace fsq
