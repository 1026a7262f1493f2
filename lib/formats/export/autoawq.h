// Export of an fsq packed checkpoint to the AutoAWQ "GEMM" layout, the 4-bit format that
// vLLM (quantization "awq" / "awq_marlin") and Hugging Face transformers (AwqConfig,
// version "gemm") load. The layout, for a linear with K = in_features (fsq: cols),
// N = out_features (fsq: rows) and group size g, all little-endian:
//
//   B.qweight  I32 [K, N/8]    codes; word (k, j) holds the codes of output columns
//                              8j .. 8j+7 of input row k, column 8j + kAutoAwqNibbleColumn[i]
//                              in bits [4i, 4i+4)
//   B.qzeros   I32 [K/g, N/8]  zero points of group k/g, packed like qweight
//   B.scales   F16 [K/g, N]    scales, the fsq [N, K/g] table transposed
//   B.bias     F16 [N]         when the linear has one
//
//   w[k, n] = (code - zero) * scale   (the fsq asymmetric formula, so the export is exact)
//
// Every other tensor is converted to F16 under its own name. config.json is the source's
// with "torch_dtype": "float16" and the fsq quantization_config replaced by
//   {"quant_method": "awq", "version": "gemm", "bits": 4, "group_size": g,
//    "zero_point": true, "modules_to_not_convert": [...]}.
//
// Sources relied on (facts, not code):
//  - AutoAWQ awq/modules/linear/gemm.py (WQLinear_GEMM): the buffer shapes and dtypes above,
//    4 bits only, and the packing order_map [0, 2, 4, 6, 1, 3, 5, 7] (value of column
//    col * 8 + order_map[i] shifted left by i * 4), the same for qzeros.
//  - AutoAWQ awq/utils/packing_utils.py: AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7], its inverse
//    AWQ_REVERSE_ORDER = [0, 4, 1, 5, 2, 6, 3, 7], and dequantize_gemm: (iweight - izeros)
//    * scales with scales and zeros repeated group_size times along the input dimension.
//  - AutoAWQ awq/models/_config.py (to_transformers_dict): the config.json keys
//    quant_method, zero_point, group_size, bits, version (lower case),
//    modules_to_not_convert.
//  - vLLM model_executor/layers/quantization/awq.py (AWQConfig): reads bits, group_size,
//    zero_point and optional modules_to_not_convert; only 4 bits; input size must be a
//    multiple of the group size and output size of 8; fp16 activations only.
//    awq_marlin.py: Marlin group sizes are -1, 32, 64, 128.
//  - transformers quantizers/quantizer_awq.py and integrations/awq.py: modules whose
//    dotted name contains an entry of modules_to_not_convert stay nn.Linear; lm_head is
//    kept dense anyway; float16 is the expected dtype.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>

#include "formats/packed_checkpoint.h"

namespace fsq {

inline constexpr int kAutoAwqBits = 4;
inline constexpr int64_t kAutoAwqPackFactor = 8;  // 4-bit values per int32 word
// Nibble i of a packed word holds output column 8j + kAutoAwqNibbleColumn[i] (AWQ_ORDER).
inline constexpr std::array<int, 8> kAutoAwqNibbleColumn = {0, 2, 4, 6, 1, 3, 5, 7};

// Why a linear of quant type `q` with `rows` outputs and `cols` inputs cannot be stored as
// AutoAWQ GEMM, or "" when it can: not 4-bit, symmetric (no stored zero points),
// per-channel or a group size other than 32/64/128, cols not a multiple of the group
// size, rows not a multiple of 8.
std::string autoawq_unsupported_reason(const UniformQuant& q, int64_t rows, int64_t cols);

// Writes the HF folder `out` (model.safetensors, config.json, the source's tokenizer and
// generation files) atomically: it appears whole or not at all. Throws fsq::Error, with
// nothing written, when `out` exists and is not an empty folder, when `src` has no
// quantized linear, a linear AutoAWQ cannot store (the message names the source folder,
// the linear and the reason), linears with different group sizes (AutoAWQ has one per
// model), or a dense tensor that is not float or does not fit in fp16.
void export_autoawq(const PackedCheckpoint& src, const std::filesystem::path& out);

}  // namespace fsq
