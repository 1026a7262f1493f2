#include "runtime/cpu/lut_q8_slice_copy.h"

namespace fsq::cpu {

LutQ8SliceCopy::LutQ8SliceCopy(const LutWeightsView& w) {
  if (!lut_q8_sparse_slices_apply(w)) return;
  const int64_t slices = lut_q8_slice_count(w.rows);
  lane_rows_.resize(static_cast<size_t>(slices * kLutQ8SliceRows));
  lane_counts_.resize(lane_rows_.size());
  slice_steps_.resize(static_cast<size_t>(slices + 1));
  step_count_ = lut_q8_sparse_slice_steps(w);
  steps_ = allocate_aligned(static_cast<size_t>(step_count_ * 2 * kLutQ8SliceRows) * sizeof(uint16_t));
  auto* steps = reinterpret_cast<uint16_t*>(steps_.get());
  prepare_lut_q8_sparse_slices(w, lane_rows_.data(), lane_counts_.data(), slice_steps_.data(), steps);
  view_ = {slices, lane_rows_.data(), lane_counts_.data(), slice_steps_.data(), steps};
}

int64_t LutQ8SliceCopy::bytes() const {
  return step_count_ * 2 * kLutQ8SliceRows * static_cast<int64_t>(sizeof(uint16_t)) +
         static_cast<int64_t>((lane_rows_.size() + lane_counts_.size() + slice_steps_.size()) * sizeof(int32_t));
}

}  // namespace fsq::cpu
