// Uniform integer weight quantization: the canonical math every pass, packer and kernel
// agrees on. This header is the contract; uniform_reference.cpp is the scalar spec.
//
// A weight matrix W [rows = out_features, cols = in_features] is split along each row into
// groups of `group_size` consecutive input columns (group_size == 0: the whole row is one
// group, "per-channel"). cols must be a multiple of group_size. Per group:
//   asymmetric (bits b, qmax = 2^b - 1):
//     lo = min(min(w), 0), hi = max(max(w), 0)   (the range always includes 0, as GPTQ's
//                                                 does: a one-sided group is not clipped and
//                                                 0 stays exact)
//     scale = fp16_round(max(hi - lo, 1e-5) / qmax)          (scales are stored as fp16)
//     zero  = clamp(nearbyint(-lo / scale), 0, qmax)           (integer, stored as uint8)
//     q     = clamp(nearbyint(w / scale) + zero, 0, qmax)
//     w'    = (q - zero) * scale
//   symmetric (qmax = 2^(b-1) - 1, qmin = -2^(b-1)):
//     scale = fp16_round(max(max|w|, 1e-5) / qmax); zero = 2^(b-1) (implicit, not stored)
//     q     = clamp(nearbyint(w / scale), qmin, qmax) + 2^(b-1)   (stored unsigned, 0..2^b-1)
//     w'    = (q - 2^(b-1)) * scale
// nearbyint rounds half to even (the default FP environment), as torch.round does. All
// arithmetic is in float32 except where fp16_round says otherwise.
#pragma once

#include <cstdint>
#include <string>

namespace fsq {

struct UniformQuant {
  int bits = 4;            // 2, 3, 4 or 8
  int64_t group_size = 128;  // 32, 64, 128, or 0 = per output channel (one group per row)
  bool symmetric = false;

  // Columns per group for a row of `cols` inputs.
  int64_t group_cols(int64_t cols) const { return group_size == 0 ? cols : group_size; }
  // Groups per row (scales and zeros per row); cols must be a multiple of group_cols.
  int64_t group_count(int64_t cols) const { return cols / group_cols(cols); }
};

}  // namespace fsq
