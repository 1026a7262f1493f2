// Block layouts follow ggml-common.h (the same ones dequantize.cpp reads). Every candidate
// scale is rounded to fp16 before its codes are chosen and its error measured, so the search
// compares the blocks exactly as they will decode. Errors accumulate in double.
#include "formats/gguf/quantize_blocks.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "common/error.h"
#include "formats/gguf/block_fit.h"
#include "formats/gguf/dequantize.h"
#include "formats/gguf/quantize_kquants.h"

namespace fsq {
namespace {

using namespace gguf_fit;

constexpr int kBlock = 32;  // elements per block of the legacy types and IQ4_NL

// ---- packing --------------------------------------------------------------------------

// Element j in the low nibble of byte j, element j + 16 in the high nibble (Q4_0 .. IQ4_NL).
void pack_nibbles(const Codes& codes, std::byte* qs) {
  for (int j = 0; j < 16; ++j)
    qs[j] = static_cast<std::byte>((codes[j] & 0xF) | (codes[j + 16] & 0xF) << 4);
}

// Bit j of the little-endian u32 is bit 4 of element j's 5-bit code (Q5_0, Q5_1).
void pack_high_bits(const Codes& codes, std::byte* qh) {
  uint32_t bits = 0;
  for (int j = 0; j < kBlock; ++j) bits |= static_cast<uint32_t>((codes[j] >> 4) & 1u) << j;
  for (int k = 0; k < 4; ++k) qh[k] = static_cast<std::byte>((bits >> (8 * k)) & 0xFF);
}

void write_scale_block(GgmlType t, const ScaleFit& f, const Codebook& cb, std::byte* out) {
  put_f16(out, f.d);
  switch (t) {
    case GgmlType::Q8_0:
      for (int i = 0; i < kBlock; ++i) out[2 + i] = static_cast<std::byte>(static_cast<int8_t>(cb.levels[f.codes[i]]));
      return;
    case GgmlType::Q5_0:
      pack_high_bits(f.codes, out + 2);  // index = q + 16
      pack_nibbles(f.codes, out + 6);
      return;
    default:  // Q4_0 (index = q + 8) and IQ4_NL (index into the table) store the index
      pack_nibbles(f.codes, out + 2);
      return;
  }
}

void write_affine_block(GgmlType t, const AffineFit& f, std::byte* out) {
  put_f16(out, f.d);
  put_f16(out + 2, f.m);
  if (t == GgmlType::Q5_1) {
    pack_high_bits(f.codes, out + 4);
    pack_nibbles(f.codes, out + 8);
  } else {
    pack_nibbles(f.codes, out + 4);
  }
}

const Codebook* codebook_for(GgmlType t) {
  static const Codebook q8 = consecutive_codebook(-127, 127);
  static const Codebook q4 = consecutive_codebook(-8, 7);
  static const Codebook q5 = consecutive_codebook(-16, 15);
  static const Codebook iq4 = iq4nl_codebook();
  switch (t) {
    case GgmlType::Q8_0: return &q8;
    case GgmlType::Q4_0: return &q4;
    case GgmlType::Q5_0: return &q5;
    case GgmlType::IQ4_NL: return &iq4;
    default: return nullptr;
  }
}

int affine_max_code(GgmlType t) {
  switch (t) {
    case GgmlType::Q4_1: return 15;
    case GgmlType::Q5_1: return 31;
    default: return 0;
  }
}

}  // namespace

bool can_quantize_gguf(GgmlType t) {
  return codebook_for(t) != nullptr || affine_max_code(t) != 0 || can_quantize_kquant(t);
}

void quantize_row_gguf(GgmlType t, std::span<const float> x, std::span<const float> importance,
                       std::span<std::byte> dst, std::span<float> reconstruction) {
  const auto& info = ggml_type_info(t);
  const std::string where = "quantize " + std::string(info.name);
  if (!can_quantize_gguf(t)) throw Error(where, "no quantizer for this type");
  const auto n = static_cast<int64_t>(x.size());
  if (n % info.block_size != 0)
    throw Error(where, "row length " + std::to_string(n) + " is not a multiple of the block size " +
                           std::to_string(info.block_size));
  if (!importance.empty() && importance.size() != x.size())
    throw Error(where, "importance has " + std::to_string(importance.size()) + " weights for " + std::to_string(n) +
                           " elements");
  if (dst.size() != *ggml_nbytes(t, n))
    throw Error(where, "output buffer of " + std::to_string(dst.size()) + " bytes, need " +
                           std::to_string(*ggml_nbytes(t, n)));
  if (!reconstruction.empty() && reconstruction.size() != x.size())
    throw Error(where, "reconstruction buffer has the wrong length");
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) throw Error(where, "element " + std::to_string(i) + " is not finite");

  const Codebook* cb = codebook_for(t);
  const int n_affine = affine_max_code(t);
  const int64_t bs = info.block_size;
  std::vector<float> weights(static_cast<size_t>(bs));
  for (int64_t blk = 0; blk < n / bs; ++blk) {
    const float* xb = x.data() + blk * bs;
    // Weights per 16-element run: a run whose weights are all zero is fitted unweighted.
    for (int64_t i0 = 0; i0 < bs; i0 += 16) {
      bool any = false;
      for (int64_t i = i0; i < i0 + 16; ++i) {
        float v = importance.empty() ? 1.0f : importance[blk * bs + i];
        if (!(v >= 0) || !std::isfinite(v))
          throw Error(where, "importance weight " + std::to_string(blk * bs + i) + " is negative or not finite");
        weights[i] = v;
        any = any || v > 0;
      }
      if (!any) std::fill(weights.begin() + i0, weights.begin() + i0 + 16, 1.0f);
    }
    std::byte* out = dst.data() + blk * info.type_size;
    float* y = reconstruction.empty() ? nullptr : reconstruction.data() + blk * bs;
    if (can_quantize_kquant(t)) {
      quantize_kquant_block(t, xb, weights.data(), out, y);
    } else if (cb != nullptr) {
      ScaleFit f = search_scale(Run{xb, weights.data(), kBlock}, *cb, round_f16);
      write_scale_block(t, f, *cb, out);
      if (y != nullptr)
        for (int i = 0; i < kBlock; ++i) y[i] = f.d * static_cast<float>(cb->levels[f.codes[i]]);
    } else {
      AffineFit f = search_affine(Run{xb, weights.data(), kBlock}, n_affine, round_f16, false);
      write_affine_block(t, f, out);
      if (y != nullptr)
        for (int i = 0; i < kBlock; ++i) y[i] = f.d * static_cast<float>(f.codes[i]) + f.m;
    }
  }
}

}  // namespace fsq
