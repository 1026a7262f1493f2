// Which ggml type each tensor of a GGUF export gets: llama-quantize's type names and the
// per-tensor rules of its mixes (Q4_K is the Q4_K_M mix, as in llama-quantize), restated
// from llama.cpp's documented behaviour so that fsq's file has the same types, and so the
// same size, as llama-quantize's for the same request. Rules differ with and without an
// importance matrix (llama.cpp gives some tensors more bits when it has none).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "formats/gguf/ggml_types.h"

namespace fsq {

enum class GgufRecipe { F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K_M, Q4_K_S, Q4_K_M, Q5_K_M, Q6_K };

struct GgufRecipeInfo {
  GgufRecipe recipe;
  const char* name;      // llama-quantize's name ("Q4_K_M")
  GgmlType base;         // the type most matrices get
  uint32_t file_type;    // llama_ftype, stored in general.file_type
};

// F32, F16 and BF16 are convert_hf_to_gguf.py's --outtype: every matrix in that type, 1-D
// tensors F32, no mix rules.
// By llama-quantize's names, case-insensitive, with its aliases (Q3_K = Q3_K_M, Q4_K =
// Q4_K_M, Q5_K = Q5_K_M); nullopt for others.
std::optional<GgufRecipe> parse_gguf_recipe(const std::string& name);
const GgufRecipeInfo& gguf_recipe_info(GgufRecipe r);
std::string gguf_recipe_names();  // "Q8_0, Q4_0, ..." for help and errors

// One weight matrix as the rules see it.
struct GgufTensorRole {
  std::string name;          // GGUF name, "blk.3.ffn_down.weight"
  int64_t cols = 0;          // ne[0]
  int64_t layer = -1;        // from "blk.N."; -1 for others
  int64_t n_layers = 0;
  int64_t n_gqa = 1;         // query heads per KV head
  bool output_head = false;  // output.weight, or token_embd.weight when the head is tied to it
  bool has_importance = false;
  bool pure = false;         // llama-quantize --pure: no mix rules (fallbacks still apply)
};

// llama.cpp's fallback when rows of `cols` are not whole blocks of `want` (Q2_K/Q3_K -> Q4_0,
// Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0; F16 when the fallback does not fit either).
GgmlType gguf_shape_fallback(GgmlType want, int64_t cols);

// The block type of a layer given `bits` by a plan (fsq plan): 2 Q2_K, 3 Q3_K, 4 Q4_K, 5 Q5_K,
// 6 Q6_K, 8 Q8_0, 16 F16; nullopt for other widths.
std::optional<GgmlType> gguf_type_for_bits(int bits);

// The type for `role`; `note` (when given) receives the reason when it is not the base type.
GgmlType gguf_recipe_type(GgufRecipe r, const GgufTensorRole& role, std::string* note = nullptr);

}  // namespace fsq
