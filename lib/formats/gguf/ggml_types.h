// The ggml tensor type table: numeric ids as stored in GGUF files, names, and the block
// geometry (elements per block, bytes per block) needed to size a tensor's data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace fsq {

// Values are the ggml_type ids written in GGUF tensor infos (gaps are retired types).
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

inline constexpr int64_t kQK = 32;    // elements per block of the legacy quants (Q4_0 .. Q8_1)
inline constexpr int64_t kQK_K = 256;  // elements per super-block of the K-quants

struct GgmlTypeInfo {
  GgmlType type;
  std::string_view name;  // as ggml prints it: "Q4_K", "F16", ...
  int64_t block_size;     // elements per block (1 for plain element types)
  size_t type_size;       // bytes per block
};

// Every known type, in id order.
std::span<const GgmlTypeInfo> ggml_types();
// nullptr when `id` is not a known ggml type (a file's type field is untrusted).
const GgmlTypeInfo* find_ggml_type(uint32_t id);
// Info of a known type (GgmlType values are always known).
const GgmlTypeInfo& ggml_type_info(GgmlType t);
std::string_view ggml_type_name(GgmlType t);
std::optional<GgmlType> ggml_type_from_name(std::string_view name);

// Bytes of `n_elements` elements of `t`; nullopt when n_elements is negative, not a
// multiple of the block size, or the byte count overflows.
std::optional<uint64_t> ggml_nbytes(GgmlType t, int64_t n_elements);

}  // namespace fsq
