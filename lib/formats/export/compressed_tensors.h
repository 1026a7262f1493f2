// Export of an fsq packed checkpoint to the compressed-tensors "pack-quantized" layout that
// llm-compressor writes and vLLM (CompressedTensorsWNA16) and transformers
// (CompressedTensorsHfQuantizer) load. For a linear `B` with N = out_features (fsq: rows),
// K = in_features (fsq: cols), b bits and G groups per row, all little-endian:
//
//   B.weight_packed     I32 [N, ceil(K b / 32)]  codes, each row one LSB-first bit stream
//                                                (code k at bits [k b, k b + b)); the stored
//                                                value is the signed code plus 2^(b-1), which
//                                                is fsq's unsigned code, so the words are
//                                                fsq's .qweight words unchanged
//   B.weight_scale      F16|F32 [N, G]           fsq's scales (widened exactly for F32)
//   B.weight_zero_point I32 [ceil(N b / 32), G]  asymmetric only: the zero points of each
//                                                group, one bit stream down the N rows
//                                                (packed along dimension 0)
//   B.weight_shape      I64 [2]                  [N, K]
//   B.bias              as the dense tensors     when the linear has one
//
//   w = (q - z) * scale, q and z signed (fsq: code - 2^(b-1), zero - 2^(b-1)), so the
//   difference, and the export, are exact.
//
// config.json's quantization_config: quant_method "compressed-tensors", format
// "pack-quantized", quantization_status "compressed", one config group per distinct
// (bits, group size, symmetry) whose targets are the exact module names of its linears (a
// plan's mixed widths give several groups), strategy "group" (group_size g) or "channel"
// (per-channel), and `ignore` listing the 2-D dense weights (lm_head, unquantized linears):
// vLLM refuses a linear that no group targets and that is not ignored.
//
// Sources relied on (facts, not code):
//  - compressed-tensors 0.20 compressors/pack_quantized/{base,helpers}.py: the tensor names,
//    pack_to_int32 (offset 2^(b-1), dense LSB-first packing of 32 elements into b words,
//    truncated to ceil(E b / 32) words; packed_dim=0 for zero points of "group" and
//    "channel" strategies), weight_shape; quantization/quant_config.py and quant_args.py:
//    the config keys. Earlier releases packed 32 / b whole codes per word, which differs
//    for b = 3 only.
//  - vLLM compressed_tensors_wNa16.py: 4 and 8 bits, zero points [N / pack factor, G]
//    packed along the output dimension; compressed_tensors.py: every linear must match a
//    target or an ignore entry, and fused q/k/v and gate/up need one scheme.
//  - transformers 5.24 quantizers/quantizer_compressed_tensors.py and
//    integrations/compressed_tensors.py: the default route builds each targeted module from
//    its group's scheme, with unpacked zero points [N, G] (so packed asymmetric checkpoints,
//    llm-compressor's own included, fail to load there); dequantize=True decompresses on load
//    with one scheme for every dense layer (get_dense_scheme), so mixed schemes need the
//    default route, i.e. symmetric codes.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "formats/dtype.h"
#include "formats/packed_checkpoint.h"

namespace fsq {

struct CompressedTensorsOptions {
  // The model dtype: dense tensors and scales are stored in it and config.json's torch_dtype
  // names it. F16 (what the engines serve) or F32 (exact for every dense tensor).
  DType dtype = DType::F16;
};

struct CompressedTensorsReport {
  int64_t linears = 0;
  std::vector<std::string> schemes;  // one "w<bits>g<group>" per config group, in group order
  // Engine limits the export hits: vLLM's 4/8 bits and fused shards, transformers' routes for
  // asymmetric layers.
  std::vector<std::string> notes;
};

// Why a linear cannot be stored as pack-quantized, or "" when it can: LUT codes, W8A8
// activation quantization and integer-only checkpoints are not weight-only uniform codes.
std::string compressed_tensors_unsupported_reason(const PackedLinear& linear);

// Writes the HF folder `out` (model.safetensors, config.json, the source's tokenizer and
// generation files) atomically. Throws fsq::Error, with nothing written, when `out` exists
// and is not an empty folder, when `src` has no quantized linear or one the layout cannot
// store (the message names the source folder, the linear and the reason), or when a dense
// tensor is not float or does not fit `options.dtype`.
CompressedTensorsReport export_compressed_tensors(const PackedCheckpoint& src, const std::filesystem::path& out,
                                                  const CompressedTensorsOptions& options = {});

}  // namespace fsq
