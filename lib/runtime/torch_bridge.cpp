#include "runtime/torch_bridge.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>

#include "common/error.h"
#include "runtime/weight_memory.h"

namespace fsq {

c10::ScalarType to_scalar_type(DType t) {
  switch (t) {
    case DType::F32: return at::kFloat;
    case DType::F16: return at::kHalf;
    case DType::BF16: return at::kBFloat16;
    case DType::F64: return at::kDouble;
    case DType::I8: return at::kChar;
    case DType::U8: return at::kByte;
    case DType::I16: return at::kShort;
    case DType::I32: return at::kInt;
    case DType::I64: return at::kLong;
    case DType::BOOL: return at::kBool;
    case DType::U16: break;  // LibTorch 1.13 has no uint16 (fsq stores only sparse column indices so)
  }
  throw Error("dtype", "no LibTorch scalar type for " + std::string(dtype_name(t)));
}

at::Tensor mapped_tensor(const TensorView& v, std::shared_ptr<const void> owner) {
  if (!owner) throw Error(v.name, "no owner keeps this tensor's mapped file open");
  return at::from_blob(
      const_cast<std::byte*>(v.data), v.shape, [owner = std::move(owner)](void*) mutable { owner.reset(); },
      at::TensorOptions().dtype(to_scalar_type(v.dtype)));
}

at::Tensor copy_to_weight_memory(const at::Tensor& t, c10::ScalarType dtype) {
  const auto bytes = static_cast<size_t>(t.numel()) * c10::elementSize(dtype);
  at::Tensor out = at::from_blob(allocate_weight_memory(bytes), t.sizes(), release_weight_memory,
                                 at::TensorOptions().dtype(dtype));
  out.copy_(t);
  return out;
}

at::Tensor tensor_from_view(const TensorView& v, c10::ScalarType dtype, c10::Device device) {
  // from_blob does not copy; the copies below do, so the result owns its memory and the
  // mapped file may be closed afterwards.
  auto src = at::from_blob(const_cast<std::byte*>(v.data), v.shape,
                           at::TensorOptions().dtype(to_scalar_type(v.dtype)));
  if (device.is_cpu()) return copy_to_weight_memory(src, dtype);
  return src.to(at::TensorOptions().dtype(dtype).device(device), /*non_blocking=*/false, /*copy=*/true);
}

std::string scalar_type_name(c10::ScalarType t) {
  switch (t) {
    case at::kFloat: return "f32";
    case at::kBFloat16: return "bf16";
    case at::kHalf: return "f16";
    case at::kDouble: return "f64";
    default: return c10::toString(t);
  }
}

}  // namespace fsq
