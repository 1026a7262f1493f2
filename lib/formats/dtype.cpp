#include "formats/dtype.h"

#include <array>
#include <utility>

namespace fsq {
namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;  // the safetensors spelling
  size_t size;
};

// One table for name and size so the two can never disagree.
constexpr std::array<DTypeInfo, 11> kDTypes{{
    {DType::F32, "F32", 4},
    {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2},
    {DType::F64, "F64", 8},
    {DType::I8, "I8", 1},
    {DType::U8, "U8", 1},
    {DType::I16, "I16", 2},
    {DType::U16, "U16", 2},
    {DType::I32, "I32", 4},
    {DType::I64, "I64", 8},
    {DType::BOOL, "BOOL", 1},
}};

const DTypeInfo& info(DType t) {
  for (const auto& d : kDTypes)
    if (d.type == t) return d;
  return kDTypes[0];  // unreachable for valid enum values
}

}  // namespace

size_t dtype_size(DType t) { return info(t).size; }

std::string_view dtype_name(DType t) { return info(t).name; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& d : kDTypes)
    if (d.name == name) return d.type;
  return std::nullopt;
}

}  // namespace fsq
