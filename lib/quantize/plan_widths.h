// The widths of a mixed-precision plan (fsq quantize --plan) as the quantize pipeline applies
// them: per decoder layer, one width per linear role. A plan from fsq plan gives one width
// per layer (plan.bits_per_layer) or, with --per-linear, one per linear (plan.bits_per_linear).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fsq {

struct ArchSpec;

using LayerWidths = std::map<std::string, int>;  // linear role -> bits

// Expands a plan to LayerWidths per layer and checks it: the layer count, the roles (a
// per-linear layer must name exactly the architecture's linears) and the widths `method`
// can store (`lut`, squeezellm: 3, 4, 8 as rtn int8, 16; otherwise 2, 3, 4, 8, 16). At most
// one of `layer_bits` and `linear_bits` is non-empty; both empty: an empty result. Throws
// fsq::Error("--plan", ...) saying what is wrong.
std::vector<LayerWidths> expand_plan_widths(const std::vector<int>& layer_bits,
                                            const std::vector<LayerWidths>& linear_bits, const ArchSpec& arch,
                                            int64_t layers, const std::string& method, bool lut);

// Whether every / some linear of the layer is at `bits`.
bool all_widths_are(const LayerWidths& widths, int bits);
bool any_width_is(const LayerWidths& widths, int bits);

// "3 at 3 bits, 2 at 4 bits" counting layers (per_linear false: each layer by its one width)
// or linears.
std::string count_widths(const std::vector<LayerWidths>& widths, bool per_linear);

}  // namespace fsq
