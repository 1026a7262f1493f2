// Distribution comparison of a model against a reference on the same scored positions:
// per-token KL(P_ref || P_model) in double precision, top-1 agreement, and summaries.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace fsq {

struct CompareStats {
  std::vector<double> kl;  // one per scored token, in scoring order
  int64_t agree = 0;       // tokens whose argmax is equal in both models

  int64_t tokens() const { return static_cast<int64_t>(kl.size()); }
  double mean_kl() const;
  double top1_agreement() const;  // agree / tokens
};

// Percentile q in [0, 100] with linear interpolation between order statistics (the
// numpy default), so p99 of a small sample is well defined. 0 for an empty input.
double percentile(std::vector<double> values, double q);

// Per-row KL(P_ref || P_model) = sum_v p_ref (log p_ref - log p_model), with both
// log-softmaxes computed in double from the given logits. Rows: [N, V], any float dtype,
// any device; returns N values on the CPU.
std::vector<double> kl_per_row(const at::Tensor& model_rows, const at::Tensor& ref_rows);

// Appends the KL of every row and counts argmax agreement.
void add_compare(const at::Tensor& model_rows, const at::Tensor& ref_rows, CompareStats& stats);

}  // namespace fsq
