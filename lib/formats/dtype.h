// Element types of checkpoint tensors (the safetensors set).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace fsq {

enum class DType { F32, F16, BF16, F64, I8, U8, I16, U16, I32, I64, BOOL };

size_t dtype_size(DType t);
std::string_view dtype_name(DType t);                       // "F32", "BF16", ...
std::optional<DType> dtype_from_name(std::string_view name);  // nullopt when unknown

}  // namespace fsq
