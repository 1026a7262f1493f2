// An owned copy of a LUT matrix's CSR part as the int8-activation GEMV's slices
// (LutQ8SparseSlices, lut_q8_kernels.h), for the code that prepares a matrix for it
// (LutLinear, the kernel tests and benchmarks). Baseline code only: not for the ISA files.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/aligned_bytes.h"
#include "runtime/cpu/lut_q8_kernels.h"

namespace fsq::cpu {

class LutQ8SliceCopy {
 public:
  LutQ8SliceCopy() = default;
  // Empty where lut_q8_sparse_slices_apply(w) is false.
  explicit LutQ8SliceCopy(const LutWeightsView& w);
  // Null when empty. Points into this object: keep it in place while the view is used.
  const LutQ8SparseSlices* view() const { return view_.slices == 0 ? nullptr : &view_; }
  // Bytes held (the padded steps and the per-lane arrays).
  int64_t bytes() const;

 private:
  std::vector<int32_t> lane_rows_, lane_counts_, slice_steps_;
  AlignedBytes steps_;  // 64-byte aligned: one step per cache line
  int64_t step_count_ = 0;
  LutQ8SparseSlices view_;
};

}  // namespace fsq::cpu
