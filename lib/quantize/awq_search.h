// Activation-aware weight quantization (AWQ, Lin et al. 2023): the searches, on at::Tensor
// on any device. Salient input channels (large mean |x|) get their weight columns scaled up
// before quantization, so their relative rounding error shrinks; the inverse scale is folded
// into whatever produces the input (awq_fold.h). Then each (row, group) range is shrunk
// (clipped) where that lowers the group's output error.
//
// Everything is deterministic for a fixed device and thread count, and ties keep the first
// grid point (the smaller alpha; the weaker clip).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "formats/quant/uniform_quant.h"

namespace fsq {

// The output of the block that consumes a group of linears, computed with candidate weights
// (float32, same order and shapes as the originals, in the original input space). The scale
// search compares it with the output for the unquantized weights.
using BlockForward = std::function<at::Tensor(const std::vector<at::Tensor>& weights)>;

// cat_j(x W_j^T) along the last dimension: the block output when only the linears are
// modelled (x: [tokens, in]).
BlockForward concatenated_linear_outputs(at::Tensor x);

// mean |x| over tokens: [tokens, in] -> [in] float32.
at::Tensor mean_abs_per_channel(const at::Tensor& x);

// AWQ scales for one alpha: s = max(m^alpha, 1e-4), divided by sqrt(max(s) * min(s)) so they
// straddle 1. alpha = 0 gives s = 1 exactly (plain round-to-nearest).
at::Tensor awq_scales(const at::Tensor& channel_magnitude, double alpha);

struct ScaleSearchOptions {
  int n_grid = 20;  // alphas 0, 1/n_grid, ..., (n_grid - 1)/n_grid
};

struct AlphaLoss {
  double alpha;
  double loss;  // MSE of the block output vs the unquantized block output
};

struct ScaleSearchResult {
  double best_alpha = 0;
  at::Tensor scales;             // [in] float32 for best_alpha
  std::vector<AlphaLoss> table;  // one entry per grid point, alpha ascending
};

// Scale search for linears W_j [out_j, in] that share the input x [tokens, in]: for each alpha,
// W_j' = fake_quantize(W_j * s) / s, and the alpha whose block output is closest (MSE) to the
// unquantized one wins. The scales come from mean |x| over all of x; `block` holds the
// tokens it evaluates (all of x or a subsample).
ScaleSearchResult awq_search_scales(const at::Tensor& x, const std::vector<at::Tensor>& weights,
                                    const UniformQuant& q, const BlockForward& block,
                                    const ScaleSearchOptions& options = {});
// The same with one quant type per weight (a per-linear plan); nullopt: that linear is not
// rounded (kept at 16 bits), so it only carries the scales.
ScaleSearchResult awq_search_scales(const at::Tensor& x, const std::vector<at::Tensor>& weights,
                                    const std::vector<std::optional<UniformQuant>>& quants, const BlockForward& block,
                                    const ScaleSearchOptions& options = {});

struct ClipSearchOptions {
  int n_grid = 20;                // shrink factors 1 - max_shrink * i / n_grid, i = 0 .. n_grid-1
  double max_shrink = 0.5;        // so 1.0, 0.975, ..., 0.525 by default
  int64_t max_tokens = 512;       // evenly strided token subsample of x
  int64_t rows_per_chunk = 64;    // output rows searched at once (bounds memory)
};

// Clip search for one linear w [rows, in] whose input is x [tokens, in] (pass the scaled pair:
// W * s and x / s). Per (row, group), the clip max = factor * max |w| minimizing the MSE of
// that group's contribution to the output on the token subsample. For groups narrower than
// the subsample that MSE is d^T G d from each group's Gram matrix G of the subsample (d: the
// group's rounding change), so a grid point costs rows x in x group_cols multiply-adds rather
// than tokens x rows x in.
// Returns [rows, groups] float32; apply with clip_groups (fake_quant.h).
at::Tensor awq_search_clip(const at::Tensor& w, const at::Tensor& x, const UniformQuant& q,
                           const ClipSearchOptions& options = {});

struct AwqOptions {
  ScaleSearchOptions scale;
  ClipSearchOptions clip;
  bool search_clip = true;  // AutoAWQ skips it for q/k projections (attention-score sensitive)
};

struct AwqGroupResult {
  ScaleSearchResult scale;
  std::vector<at::Tensor> clip_max;     // per linear, [rows, groups]; empty when not searched
  std::vector<at::Tensor> to_quantize;  // per linear: clip_groups(W_j * s), float32
};

// Both searches for one group of linears. Quantize `to_quantize` and divide the group's input
// by `scale.scales` (fold it with awq_fold.h) to get the AWQ model.
AwqGroupResult awq_search_group(const at::Tensor& x, const std::vector<at::Tensor>& weights,
                                const UniformQuant& q, const BlockForward& block,
                                const AwqOptions& options = {});

}  // namespace fsq
