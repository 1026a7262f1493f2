// The rounding stage every method ends with: each linear the layer rounds to a uniform type
// (PassContext::rounds), to nearest or by GPTQ on its group's calibration inputs, stored with
// its bias, next to the layer's norms as they now stand.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <string>

#include "quantize/layer_store.h"
#include "quantize/pass.h"

namespace fsq {

// Linear group name -> GPTQ's Hessian of the group's inputs (gptq.h gptq_hessian).
using GroupHessians = std::map<std::string, at::Tensor>;

// The Hessians of every group of ctx's architecture from their calibration inputs.
GroupHessians group_hessians(const LayerActivations& inputs, const PassContext& ctx);

// Rounds `layer`'s linears as ctx says into `stored`: by GPTQ on `gptq` when given, else to
// nearest; a role the pass already quantized (result.quantized) is stored as it is. The
// pass's report and recorded input ranges (result.input_absmax) go into `stored` too.
void round_layer(const DecoderLayer& layer, const PassContext& ctx, const GroupHessians* gptq, PassResult result,
                 StoredLayer& stored);

// StoredLayer::vectors key suffix of a linear's largest calibration |input| (W8A8 methods).
inline constexpr const char* kInputAbsmaxKey = ".input_absmax";

}  // namespace fsq
