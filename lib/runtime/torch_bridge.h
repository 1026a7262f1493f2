// The one bridge between checkpoint views (formats) and LibTorch tensors.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <memory>
#include <string>

#include "formats/dtype.h"
#include "formats/safetensors.h"

namespace fsq {

c10::ScalarType to_scalar_type(DType t);
// Copies the view into a new tensor of `dtype` on `device`; on the CPU, in huge-page weight
// memory (weight_memory.h).
at::Tensor tensor_from_view(const TensorView& v, c10::ScalarType dtype, c10::Device device);
// The view's bytes as a CPU tensor of its own dtype, without a copy: read-only (the file is
// mapped PROT_READ; writing to it faults), and `owner` (the mapped file) stays alive as long
// as the tensor or any view of it does.
at::Tensor mapped_tensor(const TensorView& v, std::shared_ptr<const void> owner);
// A contiguous copy of CPU tensor `t` (converted to `dtype`) in huge-page weight memory.
at::Tensor copy_to_weight_memory(const at::Tensor& t, c10::ScalarType dtype);
std::string scalar_type_name(c10::ScalarType t);  // "f32", "bf16", "f16"

}  // namespace fsq
