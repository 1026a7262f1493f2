// Folding per-input-channel scales s into one linear group of a decoder layer (AWQ,
// SmoothQuant): the group's linears take W * s, and what produces their input divides by
// s: the preceding RMSNorm's gain, or, for a group without a norm, the producing linear's
// output rows (only when they feed the group one to one: not o_proj under grouped-query
// attention). The layer computes the same fp function afterwards.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

namespace fsq {

struct ArchSpec;
struct DecoderLayer;
struct LinearGroup;

// Why s cannot be folded into this group ("" when it can); `input_width` is the group's
// input channels.
std::string group_fold_blocker(const DecoderLayer& layer, const LinearGroup& group, int64_t input_width,
                               const std::string& who);

// Folds s [input_width]; the group must be foldable (group_fold_blocker == "").
void fold_group_scales(DecoderLayer& layer, const ArchSpec& arch, const LinearGroup& group, const at::Tensor& s,
                       const std::string& who);

}  // namespace fsq
