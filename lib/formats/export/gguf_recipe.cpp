#include "formats/export/gguf_recipe.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "common/error.h"

namespace fsq {
namespace {

using R = GgufRecipe;
using T = GgmlType;

constexpr std::array<GgufRecipeInfo, 15> kRecipes = {{
    {R::F32, "F32", T::F32, 0},         {R::F16, "F16", T::F16, 1},          {R::BF16, "BF16", T::BF16, 32},
    {R::Q8_0, "Q8_0", T::Q8_0, 7},      {R::Q4_0, "Q4_0", T::Q4_0, 2},       {R::Q4_1, "Q4_1", T::Q4_1, 3},
    {R::Q5_0, "Q5_0", T::Q5_0, 8},      {R::Q5_1, "Q5_1", T::Q5_1, 9},       {R::IQ4_NL, "IQ4_NL", T::IQ4_NL, 25},
    {R::Q2_K, "Q2_K", T::Q2_K, 10},     {R::Q3_K_M, "Q3_K_M", T::Q3_K, 12},  {R::Q4_K_S, "Q4_K_S", T::Q4_K, 14},
    {R::Q4_K_M, "Q4_K_M", T::Q4_K, 15}, {R::Q5_K_M, "Q5_K_M", T::Q5_K, 17},  {R::Q6_K, "Q6_K", T::Q6_K, 18},
}};

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

bool ends_with(const std::string& s, const char* suffix) { return s.ends_with(suffix); }

// llama.cpp's "more bits" layers of a mix: the first and last eighth, and every third
// layer in between.
bool use_more_bits(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// The mix rule for one matrix (before shape fallbacks); `base` when the mix has none.
GgmlType mix_type(R r, T base, const GgufTensorRole& t) {
  const int64_t i = t.layer, n = t.n_layers;
  if (t.output_head) {
    if (t.cols % ggml_type_info(base).block_size != 0) return T::Q8_0;
    return base == T::Q8_0 ? T::Q8_0 : T::Q6_K;
  }
  if (ends_with(t.name, ".attn_v.weight")) {
    if (r == R::Q2_K) return t.n_gqa >= 4 ? T::Q4_K : T::Q3_K;
    if (r == R::Q3_K_M) return i < 2 ? T::Q5_K : T::Q4_K;
    if (r == R::IQ4_NL && t.n_gqa >= 4) return T::Q5_K;
    if ((r == R::Q4_K_M || r == R::Q5_K_M) && use_more_bits(i, n)) return T::Q6_K;
    if (r == R::Q4_K_S && i < 4) return T::Q5_K;
    return base;
  }
  if (ends_with(t.name, ".ffn_down.weight")) {
    if (r == R::Q2_K) return T::Q3_K;
    if (r == R::Q3_K_M) return i < n / 16 ? T::Q5_K : T::Q4_K;
    if (r == R::Q4_K_M) return use_more_bits(i, n) ? T::Q6_K : base;
    if (r == R::IQ4_NL && i < n / 8 && !t.has_importance) return T::Q5_K;
    if (r == R::Q5_K_M && use_more_bits(i, n)) return T::Q6_K;
    if (r == R::Q4_K_S && i < n / 8) return T::Q5_K;
    if ((r == R::Q4_0 || r == R::Q5_0) && t.has_importance && i < n / 8) return r == R::Q4_0 ? T::Q4_1 : T::Q5_1;
    return base;
  }
  if (ends_with(t.name, ".attn_output.weight")) {
    if (r == R::Q2_K) return T::Q3_K;
    if (r == R::Q3_K_M) return T::Q4_K;
    return base;
  }
  if (ends_with(t.name, ".attn_qkv.weight")) {
    if (r == R::Q3_K_M) return T::Q4_K;
    if (r == R::Q4_K_M) return T::Q5_K;
    if (r == R::Q5_K_M) return T::Q6_K;
  }
  return base;
}

}  // namespace

GgmlType gguf_shape_fallback(T want, int64_t cols) {
  if (cols % ggml_type_info(want).block_size == 0) return want;
  T next = want;
  switch (want) {
    case T::Q2_K:
    case T::Q3_K: next = T::Q4_0; break;
    case T::Q4_K: next = T::Q5_0; break;
    case T::Q5_K: next = T::Q5_1; break;
    case T::Q6_K: next = T::Q8_0; break;
    default: break;
  }
  return cols % ggml_type_info(next).block_size == 0 ? next : T::F16;
}

std::optional<GgmlType> gguf_type_for_bits(int bits) {
  switch (bits) {
    case 2: return T::Q2_K;
    case 3: return T::Q3_K;
    case 4: return T::Q4_K;
    case 5: return T::Q5_K;
    case 6: return T::Q6_K;
    case 8: return T::Q8_0;
    case 16: return T::F16;
    default: return std::nullopt;
  }
}

std::optional<GgufRecipe> parse_gguf_recipe(const std::string& name) {
  std::string u = upper(name);
  if (u == "Q3_K") u = "Q3_K_M";
  if (u == "Q4_K") u = "Q4_K_M";
  if (u == "Q5_K") u = "Q5_K_M";
  for (const auto& info : kRecipes)
    if (u == info.name) return info.recipe;
  return std::nullopt;
}

const GgufRecipeInfo& gguf_recipe_info(GgufRecipe r) {
  for (const auto& info : kRecipes)
    if (info.recipe == r) return info;
  throw Error("gguf recipe", "unknown recipe");
}

std::string gguf_recipe_names() {
  std::string s;
  for (const auto& info : kRecipes) s += (s.empty() ? "" : ", ") + std::string(info.name);
  return s + " (and Q3_K, Q4_K, Q5_K for the _M mixes)";
}

GgmlType gguf_recipe_type(GgufRecipe r, const GgufTensorRole& role, std::string* note) {
  const T base = gguf_recipe_info(r).base;
  if (ggml_type_info(base).block_size == 1) {  // the float types: no mix rules, every row fits
    if (note != nullptr) note->clear();
    return base;
  }
  const T mixed = role.pure ? base : mix_type(r, base, role);
  const T final_type = gguf_shape_fallback(mixed, role.cols);
  if (note != nullptr) {
    note->clear();
    if (mixed != base)
      *note = std::string(role.output_head ? "output head" : "mix rule") + ": " + std::string(ggml_type_name(mixed));
    if (final_type != mixed)
      *note += (note->empty() ? "" : "; ") + std::string("rows of ") + std::to_string(role.cols) + " are not whole " +
               std::string(ggml_type_name(mixed)) + " blocks: " + std::string(ggml_type_name(final_type));
  }
  return final_type;
}

}  // namespace fsq
