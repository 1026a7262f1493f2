// GPTQ on one linear group of a decoder layer (the linears that read the same input): their
// rows stacked into one matrix, one Hessian of the group's inputs, one GPTQ run (gptq.h),
// the codes split back per role into PassResult::quantized. Used by the W8A8 passes (on the
// smoothed inputs) and by the pipeline for rtn/awq --gptq (on the inputs of the layer as the
// pass left it).
#pragma once

#include <ATen/core/Tensor.h>

#include "quantize/pass.h"

namespace fsq {

struct LinearGroup;

// Quantizes the group's linears as they stand in `layer`, in ctx.quant_for(their columns),
// with `hessian` (gptq_hessian of the group's inputs). The report gets, under the group's
// name, GPTQ's reconstruction loss as a share of round-to-nearest's.
void quantize_group_gptq(const DecoderLayer& layer, const PassContext& ctx, const LinearGroup& group,
                         const at::Tensor& hessian, PassResult& result);

}  // namespace fsq
