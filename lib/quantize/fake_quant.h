// Group-wise uniform quantization on at::Tensor, following formats/quant/uniform_quant.h
// exactly (fp16-rounded scales, half-to-even rounding, float32 arithmetic), on whatever
// device the tensor lives. The passes search with fake_quantize (quantize -> dequantize);
// the pipeline stores what quantize_groups returns.
#pragma once

#include <ATen/core/Tensor.h>

#include "formats/quant/uniform_quant.h"
#include "formats/quant/uniform_reference.h"

namespace fsq {

// Canonical uniform values of a weight matrix [rows, cols] split into `groups` per row.
struct GroupQuantized {
  at::Tensor codes;   // [rows, cols] uint8, 0 .. 2^bits - 1
  at::Tensor scales;  // [rows, groups] float32 holding fp16 values
  at::Tensor zeros;   // [rows, groups] uint8; symmetric: always 2^(bits-1) (implicit in storage)
};

// The scale and zero point of groups whose values lie along the last dimension of
// `grouped` (float32 [..., group_cols]), as quantize_groups computes them: [..., 1] each,
// the scale fp16-rounded, the zero integer-valued (2^(bits-1) when symmetric).
struct GroupParams {
  at::Tensor scale;
  at::Tensor zero;
};
GroupParams group_params(const at::Tensor& grouped, const UniformQuant& q);
// Codes of `grouped` under `p` as integer-valued float32, in 0 .. 2^bits - 1 (broadcasting
// p over the last dimension; GPTQ quantizes one column at a time with its group's params).
at::Tensor float_codes(const at::Tensor& grouped, const GroupParams& p, const UniformQuant& q);

// w: [rows, cols] of any floating dtype; cols must be a multiple of q.group_cols(cols). Any
// group size and 2..8 bits work here (tests use tiny groups); the registry (quant_types.h)
// says what can be stored. Throws fsq::Error on non-finite weights or an fp16 scale overflow,
// as quantize_uniform does.
GroupQuantized quantize_groups(const at::Tensor& w, const UniformQuant& q);
// (codes - zero) * scale as float32 [rows, cols].
at::Tensor dequantize_groups(const GroupQuantized& g, const UniformQuant& q);

// The same values in the reference's host layout (fp16 scale bits; no zeros when symmetric).
QuantizedMatrix to_quantized_matrix(const GroupQuantized& g, const UniformQuant& q);

// dequantize_groups(quantize_groups(w, q)) without the uint8 round trip: float32 [rows, cols].
// No finiteness check here (it runs 20x per linear inside the searches); NaN stays NaN.
at::Tensor fake_quantize(const at::Tensor& w, const UniformQuant& q);

// Clamps each (row, group) of w to [-clip_max, clip_max] (clip_max: [rows, groups]); AWQ's
// clip search shrinks the range this way before quantizing. Returns float32 [rows, cols].
at::Tensor clip_groups(const at::Tensor& w, const at::Tensor& clip_max, const UniformQuant& q);
// fake_quantize(clip_groups(w, clip_max, q), q).
at::Tensor fake_quantize_clipped(const at::Tensor& w, const UniformQuant& q, const at::Tensor& clip_max);

// Round-to-nearest: the baseline pass, no search.
at::Tensor rtn_quantize(const at::Tensor& w, const UniformQuant& q);

}  // namespace fsq
