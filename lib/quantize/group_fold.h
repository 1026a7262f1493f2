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

// Grouped-query attention: o_proj's input channel (h, d) carries v_proj's output row
// (h / n_rep, d) (HF's repeat_kv), so a scale on o_proj's inputs divides out of v_proj's rows
// exactly when the n_rep query heads sharing a KV head take the same scale for each d.
// True when `group` is such a group (no norm, its producer's rows a whole fraction of its
// input width).
bool folds_through_shared_kv_heads(const DecoderLayer& layer, const LinearGroup& group, int64_t input_width,
                                   const std::string& who);
// per_channel [heads * head_dim] -> the max over the query heads of each KV head, repeated
// back to [heads * head_dim] (a vector the fold below accepts).
at::Tensor max_over_shared_kv_heads(const at::Tensor& per_channel, int64_t kv_rows, int64_t head_dim);
// fold_group_scales for such a group: s [heads * head_dim], equal across the query heads of
// each KV head; the producer's rows divide by one copy of it.
void fold_group_scales_shared_kv(DecoderLayer& layer, const LinearGroup& group, const at::Tensor& s, int64_t head_dim,
                                 const std::string& who);

}  // namespace fsq
