// The rotation QuaRot and QSpec apply before quantizing activations to 4 bits: a model
// transform that computes the same function in exact arithmetic, with the residual stream
// rotated by an orthogonal Q (rotation/orthogonal.h) so that no channel carries an outlier.
//
// Row-vector convention (HF linears: y = x W^T + b, W [out, in]):
//  1. each RMSNorm's weight g is folded into the linears that read it (W[:, k] *= g[k]:
//     q/k/v for input_layernorm, gate/up for post_attention_layernorm, the head for the
//     final norm) and becomes ones; RMSNorm(x Q) = RMSNorm(x) Q then holds, since the norm
//     of a row is unchanged by Q. A tied head is untied first (the embedding is not scaled).
//  2. embedding E -> E Q; every linear that reads the residual W -> W Q; every linear that
//     writes into it (o_proj, down_proj) W -> Q^T W and its bias b -> b Q; the head W -> W Q.
// Which linears read or write is the architecture table's groups (a group with a norm reads
// the residual, one without writes into it), never module names. Values are computed in
// double and rounded to f32 once.
#pragma once

#include <cstdint>
#include <string>

#include "formats/checkpoint.h"
#include "quantize/rotation/orthogonal.h"

namespace fsq {

struct RotateOptions {
  RotationKind kind = RotationKind::Hadamard;
  uint64_t seed = 0;
};

// An in-memory f32 checkpoint of `src` rotated (tie_word_embeddings false; rotary caches
// and other ignored extras dropped). Throws fsq::Error naming the checkpoint for a tensor
// the architecture does not read, or (Hadamard) a hidden size without a known Hadamard
// matrix. Holds the whole model in f32 (fine for the small models QSpec is measured on).
Checkpoint rotate_checkpoint(const Checkpoint& src, const RotateOptions& opts);

// "randomized hadamard 12x12x2x2 d=576 seed 0" for the checkpoint's hidden size.
std::string describe_rotation(const Checkpoint& src, const RotateOptions& opts);

}  // namespace fsq
