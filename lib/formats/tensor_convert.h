// Element type conversion of float tensors, shared by the writers that re-type weights
// (the HF folder writer, the exporters).
#pragma once

#include <cstddef>
#include <vector>

#include "formats/dtype.h"
#include "formats/safetensors.h"

namespace fsq {

// The elements of `t` (F32, F16 or BF16) as `dtype` (F32, F16 or BF16), widened exactly
// to float32 and rounded to nearest even. Values beyond the target's range become inf.
// Throws fsq::Error naming the tensor for any other dtype.
std::vector<std::byte> convert_float_tensor(const TensorView& t, DType dtype);

}  // namespace fsq
