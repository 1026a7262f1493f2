// A StoredLayer's plain values: the linears a plan keeps at 16 bits, and the layer as the
// packed checkpoint computes it (what the next layer's calibration inputs come from).
#pragma once

#include "quantize/layer_store.h"
#include "quantize/plan_widths.h"

namespace fsq {

struct ArchSpec;
struct DecoderLayer;

// StoredLayer::vectors key suffix of a linear kept at 16 bits: its weight rounded to fp16,
// row-major [out, in].
inline constexpr const char* kFp16WeightKey = ".weight";
// StoredLayer::vectors key of the integer-only ranges ([kIntonlyRangeCount], IntonlyRange order).
inline constexpr const char* kIntonlyRangesKey = "intonly_ranges";

// The linears of `layer` a plan keeps at 16 bits (all of them when `widths` is null): each
// weight rounded to fp16 (what the checkpoint will hold) and its bias, and the layer's norms.
void keep_fp16_linears(const DecoderLayer& layer, const ArchSpec& arch, const LayerWidths* widths, StoredLayer& stored);

// `layer` as the packed checkpoint computes it: norms, biases and dequantized weights from
// `stored` (the same values whether the layer was just quantized or resumed from disk).
void use_stored_values(DecoderLayer& layer, const ArchSpec& arch, const StoredLayer& stored);

}  // namespace fsq
