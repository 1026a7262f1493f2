#include "formats/tensor_convert.h"

#include <cstdint>
#include <cstring>
#include <string>

#include "common/error.h"
#include "common/half.h"

namespace fsq {

std::vector<std::byte> convert_float_tensor(const TensorView& t, DType dtype) {
  const auto is_float = [](DType d) { return d == DType::F32 || d == DType::F16 || d == DType::BF16; };
  if (!is_float(t.dtype))
    throw Error(t.name, std::string("cannot convert dtype ") + std::string(dtype_name(t.dtype)));
  if (!is_float(dtype))
    throw Error(t.name, std::string("cannot convert to dtype ") + std::string(dtype_name(dtype)));
  const int64_t n = t.numel();
  std::vector<float> f32(static_cast<size_t>(n));
  if (t.dtype == DType::F32) {
    std::memcpy(f32.data(), t.data, t.nbytes);
  } else {
    // memcpy per element: a foreign file need not align 16-bit tensors.
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, t.data + 2 * i, sizeof h);
      f32[i] = t.dtype == DType::BF16 ? bf16_to_f32(h) : f16_to_f32(h);
    }
  }
  std::vector<std::byte> out(static_cast<size_t>(n) * dtype_size(dtype));
  if (dtype == DType::F32) {
    std::memcpy(out.data(), f32.data(), out.size());
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t h = dtype == DType::BF16 ? f32_to_bf16(f32[i]) : f32_to_f16(f32[i]);
      std::memcpy(out.data() + 2 * i, &h, sizeof h);
    }
  }
  return out;
}

}  // namespace fsq
