#include "formats/gguf/ggml_types.h"

#include <array>
#include <limits>

namespace fsq {
namespace {

// Block geometry from ggml-common.h (sizeof of each block_* struct).
constexpr std::array<GgmlTypeInfo, 32> kTypes = {{
    {GgmlType::F32, "F32", 1, 4},
    {GgmlType::F16, "F16", 1, 2},
    {GgmlType::Q4_0, "Q4_0", kQK, 2 + kQK / 2},
    {GgmlType::Q4_1, "Q4_1", kQK, 2 + 2 + kQK / 2},
    {GgmlType::Q5_0, "Q5_0", kQK, 2 + 4 + kQK / 2},
    {GgmlType::Q5_1, "Q5_1", kQK, 2 + 2 + 4 + kQK / 2},
    {GgmlType::Q8_0, "Q8_0", kQK, 2 + kQK},
    // ggml's block_q8_1 holds two halves (d, s); gguf-py's table says 4 + 4 (older layout).
    {GgmlType::Q8_1, "Q8_1", kQK, 2 + 2 + kQK},
    {GgmlType::Q2_K, "Q2_K", kQK_K, kQK_K / 16 + kQK_K / 4 + 2 + 2},
    {GgmlType::Q3_K, "Q3_K", kQK_K, kQK_K / 8 + kQK_K / 4 + 12 + 2},
    {GgmlType::Q4_K, "Q4_K", kQK_K, 2 + 2 + 12 + kQK_K / 2},
    {GgmlType::Q5_K, "Q5_K", kQK_K, 2 + 2 + 12 + kQK_K / 8 + kQK_K / 2},
    {GgmlType::Q6_K, "Q6_K", kQK_K, kQK_K / 2 + kQK_K / 4 + kQK_K / 16 + 2},
    {GgmlType::Q8_K, "Q8_K", kQK_K, 4 + kQK_K + kQK_K / 16 * 2},
    {GgmlType::IQ2_XXS, "IQ2_XXS", kQK_K, 2 + kQK_K / 4},
    {GgmlType::IQ2_XS, "IQ2_XS", kQK_K, 2 + kQK_K / 4 + kQK_K / 32},
    {GgmlType::IQ3_XXS, "IQ3_XXS", kQK_K, 2 + 3 * kQK_K / 8},
    {GgmlType::IQ1_S, "IQ1_S", kQK_K, 2 + kQK_K / 8 + kQK_K / 16},
    {GgmlType::IQ4_NL, "IQ4_NL", kQK, 2 + kQK / 2},
    {GgmlType::IQ3_S, "IQ3_S", kQK_K, 2 + kQK_K / 4 + kQK_K / 32 + kQK_K / 8 + kQK_K / 64},
    {GgmlType::IQ2_S, "IQ2_S", kQK_K, 2 + kQK_K / 4 + kQK_K / 16},
    {GgmlType::IQ4_XS, "IQ4_XS", kQK_K, 2 + 2 + kQK_K / 64 + kQK_K / 2},
    {GgmlType::I8, "I8", 1, 1},
    {GgmlType::I16, "I16", 1, 2},
    {GgmlType::I32, "I32", 1, 4},
    {GgmlType::I64, "I64", 1, 8},
    {GgmlType::F64, "F64", 1, 8},
    {GgmlType::IQ1_M, "IQ1_M", kQK_K, kQK_K / 8 + kQK_K / 16 + kQK_K / 32},
    {GgmlType::BF16, "BF16", 1, 2},
    {GgmlType::TQ1_0, "TQ1_0", kQK_K, (kQK_K - 4 * kQK_K / 64) / 5 + kQK_K / 64 + 2},
    {GgmlType::TQ2_0, "TQ2_0", kQK_K, kQK_K / 4 + 2},
    {GgmlType::MXFP4, "MXFP4", kQK, 1 + kQK / 2},
}};

}  // namespace

std::span<const GgmlTypeInfo> ggml_types() { return kTypes; }

const GgmlTypeInfo* find_ggml_type(uint32_t id) {
  for (const auto& t : kTypes)
    if (static_cast<uint32_t>(t.type) == id) return &t;
  return nullptr;
}

const GgmlTypeInfo& ggml_type_info(GgmlType t) {
  // Every enumerator is in the table (checked by the tests), so this cannot be null.
  return *find_ggml_type(static_cast<uint32_t>(t));
}

std::string_view ggml_type_name(GgmlType t) { return ggml_type_info(t).name; }

std::optional<GgmlType> ggml_type_from_name(std::string_view name) {
  for (const auto& t : kTypes)
    if (t.name == name) return t.type;
  return std::nullopt;
}

std::optional<uint64_t> ggml_nbytes(GgmlType t, int64_t n_elements) {
  const auto& info = ggml_type_info(t);
  if (n_elements < 0 || n_elements % info.block_size != 0) return std::nullopt;
  uint64_t blocks = static_cast<uint64_t>(n_elements / info.block_size);
  if (blocks > std::numeric_limits<uint64_t>::max() / info.type_size) return std::nullopt;
  return blocks * info.type_size;
}

}  // namespace fsq
